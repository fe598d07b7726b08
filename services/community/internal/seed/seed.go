// Package seed loads the community demo data: a dozen events, upcoming and
// past, online and in venues, in the directory's demo spaces 1 (Spreeufer
// Coworking, Berlin, Pro) and 2 (Tejo Coworking, Lisbon) and in no space.
package seed

import (
	"context"
	"fmt"
	"time"

	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
)

// Demo space ids, as the directory's demo seed creates them.
const (
	DemoBerlinSpaceID = 1
	DemoLisbonSpaceID = 2
)

func berlin(e eventbus.Event) eventbus.Event {
	e.Timezone, e.CityName, e.CitySlug = "Europe/Berlin", "Berlin", "berlin"
	e.SpaceID, e.SpaceName = DemoBerlinSpaceID, "Spreeufer Coworking"
	if !e.Online {
		e.VenueName, e.VenueAddress = "Spreeufer Coworking", "Holzmarktstraße 25, 10243 Berlin"
	}
	return e
}

func lisbon(e eventbus.Event) eventbus.Event {
	e.Timezone, e.CityName, e.CitySlug = "Europe/Lisbon", "Lisbon", "lisbon"
	e.SpaceID, e.SpaceName = DemoLisbonSpaceID, "Tejo Coworking"
	if !e.Online {
		e.VenueName, e.VenueAddress = "Tejo Coworking", "Rua da Prata 80, 1100-415 Lisboa"
	}
	return e
}

// DemoEvents returns the demo events around today (UTC): dates move with the
// calendar so that the demo always has upcoming events, and stay the same
// within one day so that loading twice changes nothing.
func DemoEvents(now time.Time) []eventbus.Event {
	today := now.UTC().Truncate(24 * time.Hour)
	at := func(zone string, days, hour, minute int) time.Time {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			loc = time.UTC
		}
		d := today.AddDate(0, 0, days)
		return time.Date(d.Year(), d.Month(), d.Day(), hour, minute, 0, 0, loc)
	}
	ev := func(e eventbus.Event, days, startH, startM, hours int) eventbus.Event {
		if e.Timezone == "" {
			e.Timezone = "UTC"
		}
		e.StartsAt = at(e.Timezone, days, startH, startM)
		e.EndsAt = e.StartsAt.Add(time.Duration(hours) * time.Hour)
		return e
	}
	return []eventbus.Event{
		ev(berlin(eventbus.Event{Slug: "coworking-breakfast-berlin", Title: "Coworking Breakfast",
			Summary:     "Coffee, pastries and introductions before the workday starts.",
			Description: "Our monthly breakfast for members and guests. Meet the people at the next desk, share what you are working on and find collaborators. Vegan options available.",
			IsFree:      true, Tags: []string{"networking", "community"}}), 3, 8, 30, 2),
		ev(berlin(eventbus.Event{Slug: "community-manager-meetup-berlin", Title: "Community Manager Meetup Berlin",
			Summary:         "Community managers from Berlin's coworking spaces swap notes on events, onboarding and member retention.",
			Description:     "Three short talks and an open discussion: onboarding rituals that work, running events on a budget, and measuring community health. Drinks afterwards.",
			RegistrationURL: "https://spreeufer-coworking.example.com/events/cm-meetup", IsFree: true,
			Tags: []string{"community-management", "meetup"}}), 9, 18, 30, 3),
		ev(berlin(eventbus.Event{Slug: "pitch-night-berlin", Title: "Founders Pitch Night",
			Summary:         "Eight early-stage founders pitch to members and two local angels.",
			Description:     "Five minutes per pitch, five minutes of questions. Members vote for the audience award. Doors open at 18:30.",
			RegistrationURL: "https://spreeufer-coworking.example.com/events/pitch-night", IsFree: false,
			Tags: []string{"startups", "pitch"}}), 24, 19, 0, 3),
		ev(berlin(eventbus.Event{Slug: "remote-hiring-webinar", Title: "Hiring Remotely Without Losing Culture",
			Summary:     "A webinar on hiring and onboarding distributed teams, hosted by Spreeufer Coworking.",
			Description: "How to write remote-friendly job posts, run async interviews and onboard people you have never met in person.",
			Online:      true, OnlineURL: "https://meet.example.com/remote-hiring", IsFree: true,
			Tags: []string{"hiring", "remote-work", "webinar"}}), 13, 16, 0, 1),
		ev(berlin(eventbus.Event{Slug: "summer-rooftop-party-berlin", Title: "Summer Rooftop Party",
			Summary:     "Members' rooftop party with DJ and barbecue.",
			Description: "Our yearly celebration on the roof terrace. Bring a friend.",
			IsFree:      true, Tags: []string{"party", "community"}}), -20, 18, 0, 5),
		ev(lisbon(eventbus.Event{Slug: "digital-nomad-meetup-lisbon", Title: "Digital Nomad Meetup Lisbon",
			Summary:     "New in Lisbon? Meet other remote workers over petiscos.",
			Description: "A relaxed evening for remote workers and nomads who just arrived or are staying for a while. Tips on visas, neighbourhoods and the best coffee in Baixa.",
			IsFree:      true, Tags: []string{"nomads", "networking"}}), 5, 19, 0, 3),
		ev(lisbon(eventbus.Event{Slug: "portuguese-for-coworkers", Title: "Portuguese for Coworkers",
			Summary:     "A beginner-friendly Portuguese lesson during lunch.",
			Description: "Learn the phrases you need at the café, the market and the Finanças office. Taught by a certified teacher; materials included.",
			IsFree:      false, RegistrationURL: "https://tejo-coworking.example.com/portuguese", Tags: []string{"language", "workshop"}}), 11, 12, 30, 1),
		ev(lisbon(eventbus.Event{Slug: "freelancer-tax-clinic-lisbon", Title: "Freelancer Tax Clinic",
			Summary:     "Ask an accountant about recibos verdes, NHR and VAT.",
			Description: "Short one-to-one slots with a certified accountant for freelancers working from Portugal. Book a slot at the front desk.",
			IsFree:      true, Tags: []string{"freelance", "taxes"}}), 30, 10, 0, 4),
		ev(lisbon(eventbus.Event{Slug: "sunset-networking-lisbon", Title: "Sunset Networking on the Terrace",
			Summary:     "Drinks and networking with a view of the Tagus.",
			Description: "An evening on the terrace with members of Tejo Coworking and neighbouring studios.",
			IsFree:      true, Tags: []string{"networking"}}), -6, 18, 30, 3),
		ev(eventbus.Event{Slug: "future-of-coworking-summit", Title: "The Future of Coworking Summit",
			Summary:     "An online summit on flexible workspace trends, with operators from twelve countries.",
			Description: "Keynotes and panels on hybrid work, membership pricing, sustainability and the role of community managers. Recordings are shared with all registrants.",
			Online:      true, OnlineURL: "https://summit.example.com/live", RegistrationURL: "https://summit.example.com/register",
			IsFree: false, Tags: []string{"summit", "industry", "webinar"}}, 17, 14, 0, 6),
		ev(eventbus.Event{Slug: "async-communication-workshop", Title: "Async Communication Workshop",
			Summary:     "Practical habits for teams spread over time zones.",
			Description: "A hands-on online workshop: writing decisions down, running async stand-ups and keeping meetings for what needs them.",
			Online:      true, OnlineURL: "https://meet.example.com/async-workshop", IsFree: true,
			Tags: []string{"remote-work", "workshop"}}, 7, 15, 0, 2),
		ev(eventbus.Event{Slug: "space-operators-roundtable", Title: "Space Operators Roundtable",
			Summary:     "Coworking operators compare occupancy, pricing and event programmes.",
			Description: "A closed-door online roundtable for operators; notes were shared with participants.",
			Online:      true, OnlineURL: "https://meet.example.com/operators", IsFree: true,
			Tags: []string{"operators", "industry"}}, -14, 16, 0, 2),
	}
}

// LoadDemo saves the demo events (creates or updates each by slug) and
// returns how many it saved.
func LoadDemo(ctx context.Context, events *eventbus.Business, now time.Time) (int, error) {
	demo := DemoEvents(now)
	for _, e := range demo {
		if _, err := events.Save(ctx, e); err != nil {
			return 0, fmt.Errorf("demo event %s: %w", e.Slug, err)
		}
	}
	return len(demo), nil
}
