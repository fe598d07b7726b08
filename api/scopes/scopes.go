// Package scopes names the change versions of the API's answers (libs/changes
// keeps them): the writers bump them, the gateway keys its cache and its
// ETags by them, so both sides read their names from here.
package scopes

import "strconv"

const (
	// Jobs is every job: any write to any job bumps it.
	Jobs = "jobs"
	// JobsBulk is bumped with Jobs by writers that change many spaces' jobs at
	// once without naming them (the expiry sweep, seeders, operators' tools);
	// a space's view depends on it beside JobsSpace.
	JobsBulk  = "jobs:bulk"
	Directory = "directory"
	Blog      = "blog"
	Events    = "events"
)

// JobsSpace is the scope of one space's jobs (what a space key lists).
func JobsSpace(spaceID int64) string { return "jobs:space:" + strconv.FormatInt(spaceID, 10) }

// JobsListed are the scopes a listing of jobs depends on: a space key lists
// its own space's jobs only, so its view moves with that space's writes (and
// the bulk ones), not every job's; any other caller's with every job's.
func JobsListed(spaceID int64) []string {
	if spaceID > 0 {
		return []string{JobsSpace(spaceID), JobsBulk}
	}
	return []string{Jobs}
}
