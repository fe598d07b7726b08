package jobbus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/validate"
)

// prepare applies every field rule and reports all problems at once; the
// directory is asked here, before any transaction begins.
func (b *Business) prepare(ctx context.Context, caller Caller, in CreateInput) (NewJob, error) {
	p := append([]string(nil), in.TypeProblems...)
	nj := NewJob{KeyID: caller.KeyID}

	nj.Title = requiredText(in.Title, "title", MaxTitleLen, &p)
	nj.Company = requiredText(in.Company, "company", MaxCompanyLen, &p)
	if in.Description == nil {
		p = append(p, "description is required")
	} else {
		nj.Description = description(*in.Description, &p)
	}
	if in.JobType == nil {
		p = append(p, "job_type is required")
	} else {
		nj.JobType = jobType(*in.JobType, &p)
	}
	if in.Tags == nil {
		p = append(p, "tags is required")
	} else {
		nj.Tags = tags(*in.Tags, &p)
	}
	if in.ExternalURL != nil && strings.TrimSpace(*in.ExternalURL) != "" {
		u, ok := ExternalURL(*in.ExternalURL)
		if !ok {
			p = append(p, fmt.Sprintf("external_url must be an absolute http or https URL of at most %d characters", MaxURLLen))
		}
		nj.ExternalURL = u
	}
	if in.ApplyURL != nil && strings.TrimSpace(*in.ApplyURL) != "" {
		u, ok := ApplyURL(*in.ApplyURL)
		if !ok {
			p = append(p, "apply_url must be an absolute http or https URL or a mailto: link")
		}
		nj.ApplyURL = &u
	}
	nj.WorkplaceType = workplace(in.WorkplaceType, in.IsRemote, "", &p)
	nj.IsRemote = nj.WorkplaceType == WorkplaceRemote
	nj.SalaryPeriod = salaryPeriod(in.SalaryPeriod, "", &p)
	if in.ExternalRef != nil {
		nj.ExternalRef = externalRef(*in.ExternalRef, in.fromSource, &p)
	}
	nj.InvEmail = b.cfg.DefaultInvEmail
	if in.InvEmail != nil && ValidEmail(strings.TrimSpace(*in.InvEmail)) {
		nj.InvEmail = strings.TrimSpace(*in.InvEmail)
	}
	nj.Currency = DefaultCurrency
	if in.Currency != nil {
		nj.Currency = currency(*in.Currency, &p)
	}
	salary(in.SalMin, in.SalMax, &p)
	nj.SalMin, nj.SalMax = in.SalMin, in.SalMax

	planID := int64(DefaultPlanID)
	if in.IDPlan != nil {
		planID, nj.PlanGiven = *in.IDPlan, true
	}
	if planID < 1 || planID > 1<<31-1 {
		p = append(p, "id_plan must be a positive integer")
	} else {
		plan, err := b.store.Jobs.Plan(ctx, int(planID))
		switch {
		case errors.Is(err, ErrNotFound) || err == nil && !plan.Active:
			p = append(p, fmt.Sprintf("id_plan %d is not an active plan", planID))
		case err != nil:
			return NewJob{}, fmt.Errorf("read plan: %w", err)
		}
		nj.Plan = plan
	}

	// The space: the key's own, or for a key without one an id_space that
	// exists and is confirmed.
	pro := false
	switch {
	case in.IDSpace != nil && caller.SpaceID != 0 && *in.IDSpace != caller.SpaceID:
		return NewJob{}, ErrSpaceConflict
	case caller.SpaceID != 0:
		sp, ok, err := b.dir.Space(ctx, caller.SpaceID)
		if err != nil {
			return NewJob{}, err
		}
		nj.SpaceID = caller.SpaceID
		if ok {
			name := sp.Name
			nj.SpaceName = &name
			pro = sp.Confirmed && sp.IsPro
		}
	case in.IDSpace != nil && !caller.TrustedImporter:
		return NewJob{}, ErrSpaceNotGranted
	case in.IDSpace != nil:
		if *in.IDSpace < 1 {
			p = append(p, "id_space must be a positive integer")
			break
		}
		sp, ok, err := b.dir.Space(ctx, *in.IDSpace)
		if err != nil {
			return NewJob{}, err
		}
		if !ok || !sp.Confirmed {
			p = append(p, fmt.Sprintf("id_space %d is not a confirmed space", *in.IDSpace))
			break
		}
		name := sp.Name
		nj.SpaceID, nj.SpaceName = sp.ID, &name
	}

	if err := b.resolveCity(ctx, in, &nj, &p); err != nil {
		return NewJob{}, err
	}

	if len(p) > 0 {
		return NewJob{}, &validate.Error{What: "job", Problems: p}
	}
	qualified := pro || caller.TrustedImporter
	nj.Status = InitialStatus(qualified)
	nj.UpdateFrom, nj.UpdateTo, nj.Refresh = UpdateMoves(qualified)
	nj.Slug = Slug(nj.Title, nj.City.Slug)
	nj.Fingerprint = Fingerprint(nj.Title, nj.Company, nj.City.ID, nj.ExternalURL)
	nj.OwnerKeyID = OwnerOf(caller)
	nj.HashIdentifier = newHash()
	return nj, nil
}

func (b *Business) resolveCity(ctx context.Context, in CreateInput, nj *NewJob, p *[]string) error {
	switch {
	case in.IDCity != nil:
		if *in.IDCity < 1 {
			*p = append(*p, "id_city must be a positive integer")
			return nil
		}
		c, ok, err := b.dir.City(ctx, *in.IDCity)
		if err != nil {
			return err
		}
		if !ok || !c.Confirmed {
			*p = append(*p, fmt.Sprintf("id_city %d is not a confirmed city; find one with GET /v2/cities", *in.IDCity))
			return nil
		}
		nj.City = c
	case in.CityName != nil && strings.TrimSpace(*in.CityName) != "":
		name := collapseSpaces(*in.CityName)
		n := len(*p)
		plainLine(name, "city_name", p)
		if utf8.RuneCountInString(name) > MaxCityNameLen {
			*p = append(*p, fmt.Sprintf("city_name must be at most %d characters", MaxCityNameLen))
		}
		if len(*p) > n {
			return nil
		}
		r, err := b.dir.ResolveCityName(ctx, name)
		if err != nil {
			return err
		}
		switch r.Result {
		case "resolved":
			nj.City = r.City
		case "ambiguous":
			names := make([]string, 0, len(r.Candidates))
			for _, c := range r.Candidates {
				names = append(names, c.Name+" (id_city "+strconv.FormatInt(c.ID, 10)+")")
			}
			*p = append(*p, fmt.Sprintf("city_name %q matches several cities: %s; send id_city instead", name, strings.Join(names, ", ")))
		default:
			*p = append(*p, fmt.Sprintf("city_name %q matches no confirmed city; find one with GET /v2/cities", name))
		}
	default:
		// A city field sent with the wrong type has its problem reported
		// already; saying it is missing too would contradict it.
		for _, tp := range in.TypeProblems {
			if strings.HasPrefix(tp, "id_city ") || strings.HasPrefix(tp, "city_name ") {
				return nil
			}
		}
		*p = append(*p, "id_city or city_name is required")
	}
	return nil
}

func requiredText(v *string, name string, max int, p *[]string) string {
	if v == nil || strings.TrimSpace(*v) == "" {
		*p = append(*p, name+" is required")
		return ""
	}
	plainLine(*v, name, p)
	s := collapseSpaces(*v)
	if utf8.RuneCountInString(s) > max {
		*p = append(*p, fmt.Sprintf("%s must be at most %d characters", name, max))
	}
	return s
}

// externalRef validates an importer's reference: 1 to MaxExternalRefLen
// characters of one line, trimmed (what the importer's system shows).
// SourceRefPrefix is reserved for the jobs of import sources (ApplySource).
func externalRef(v string, fromSource bool, p *[]string) *string {
	s := strings.TrimSpace(v)
	switch {
	case s == "":
		*p = append(*p, "external_ref must not be empty; leave it out for a job without one")
		return nil
	case !fromSource && strings.HasPrefix(s, SourceRefPrefix):
		*p = append(*p, "external_ref must not start with "+strconv.Quote(SourceRefPrefix)+": it is reserved for the jobs of import sources")
		return nil
	case !utf8.ValidString(s):
		*p = append(*p, "external_ref must be valid UTF-8 text")
		return nil
	case utf8.RuneCountInString(s) > MaxExternalRefLen:
		*p = append(*p, fmt.Sprintf("external_ref must be at most %d characters", MaxExternalRefLen))
		return nil
	}
	n := len(*p)
	plainLine(s, "external_ref", p)
	if len(*p) > n {
		return nil
	}
	return &s
}

func newHash() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
