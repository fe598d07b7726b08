package statsdb

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "statsdb", pgtest.Schema{Name: "jobs", Migrations: migrations.FS}, pgtest.SetPool(&pool)))
}

// No column of the jobs schema may hold a client's address or user agent
// (docs/privacy.md): none is named like one, and the statistics' tables
// have exactly the columns their migration documents, the visitor a bigint
// hash and no other free text than the channel label.
func TestStatsSchemaStoresNoPerson(t *testing.T) {
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = 'jobs' ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	person := regexp.MustCompile(`(^|_)(ip|ips|ip_address|addr|remote_addr|client_ip|user_agent|useragent|ua|agent_string|forwarded|x_forwarded_for)($|_)`)
	want := map[string]map[string]string{
		"stats_events":   {"job_id": "bigint", "kind": "smallint", "channel": "text", "day": "date", "at": "timestamp with time zone", "agent": "smallint", "visitor": "bigint", "n": "integer"},
		"stats_visitors": {"job_id": "bigint", "day": "date", "kind": "smallint", "channel": "text", "visitor": "bigint"},
		"stats_daily":    {"job_id": "bigint", "day": "date", "channel": "text", "kind": "smallint", "agent": "smallint", "events": "bigint", "uniques": "bigint"},
	}
	seen := map[string]int{}
	for rows.Next() {
		var table, column, typ string
		if err := rows.Scan(&table, &column, &typ); err != nil {
			t.Fatal(err)
		}
		if person.MatchString(column) {
			t.Errorf("%s.%s: a column named like a client's address or user agent", table, column)
		}
		if cols, ok := want[table]; ok {
			seen[table]++
			if cols[column] != typ {
				t.Errorf("%s.%s %s: not a documented column of the statistics (want %v)", table, column, typ, cols)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for table, cols := range want {
		if seen[table] != len(cols) {
			t.Errorf("%s has %d columns, want %d", table, seen[table], len(cols))
		}
	}
}

func write(t *testing.T, s *Store, events ...statsbus.Event) {
	t.Helper()
	if err := s.Write(context.Background(), events); err != nil {
		t.Fatal(err)
	}
}

// The roll-ups count events and the day's unique visitors; a UTC day ends
// at midnight UTC whatever the clock's zone, and a visitor is counted once
// per day and channel, and once per day over every channel.
func TestWriteRollsUpByUTCDay(t *testing.T) {
	ctx := context.Background()
	s := New(pool)
	job := time.Now().UnixNano() % 1_000_000_000
	berlin := time.FixedZone("CET", 3600)
	// 23:30 UTC on 1 March is 00:30 on 2 March in Berlin: still 1 March.
	late := time.Date(2026, 3, 1, 23, 30, 0, 0, time.UTC).In(berlin)
	early := time.Date(2026, 3, 2, 0, 10, 0, 0, time.UTC)
	write(t, s,
		statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: late, Visitor: 7},
		statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: late, Visitor: 7},
		statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "alert", At: late, Visitor: 7},
		statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: late, Visitor: 8},
		statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: late, Agent: statsbus.AgentCrawler},
		statsbus.Event{JobID: job, Kind: statsbus.KindImpression, Channel: "feed", At: late, N: 40},
	)
	// A later batch: visitor 7 again on the same day is not new; on the next
	// UTC day it is.
	write(t, s,
		statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: late, Visitor: 7},
		statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: early, Visitor: 7},
		statsbus.Event{JobID: job, Kind: statsbus.KindView, Channel: "page", At: early, Visitor: 9, Agent: statsbus.AgentNone},
	)
	rows, err := s.Rows(ctx, job, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	st := statsbus.Series(job, statsbus.Range{From: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		Interval: statsbus.IntervalDay}, rows)
	if len(st.Periods) != 2 {
		t.Fatalf("periods: %+v", st.Periods)
	}
	d1, d2 := st.Periods[0].Counts, st.Periods[1].Counts
	if d1.Clicks != 5 || d1.UniqueClicks != 2 || d1.BotClicks != 1 || d1.Impressions != 40 {
		t.Errorf("1 March: %+v", d1)
	}
	if page := st.Periods[0].ByChannel["page"]; page.Clicks != 4 || page.UniqueClicks != 2 {
		t.Errorf("1 March, page: %+v", page)
	}
	if alert := st.Periods[0].ByChannel["alert"]; alert.Clicks != 1 || alert.UniqueClicks != 1 {
		t.Errorf("1 March, alert: %+v", alert)
	}
	if d2.Clicks != 1 || d2.UniqueClicks != 1 || d2.BotViews != 1 || d2.Views != 0 {
		t.Errorf("2 March: %+v", d2)
	}
	week := statsbus.Series(job, statsbus.Range{From: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		Interval: statsbus.IntervalWeek}, rows)
	// 1 March 2026 is a Sunday, 2 March a Monday: two ISO weeks.
	if len(week.Periods) != 2 || week.Periods[0].Start.Weekday() != time.Monday || week.Totals.Clicks != 6 || week.Totals.UniqueClicks != 3 {
		t.Errorf("weeks: %+v totals %+v", week.Periods, week.Totals)
	}

	// The purge: raw events before the retention go, visitor hashes of
	// closed days are erased, the roll-ups stay.
	if err := s.Purge(ctx, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var raw, hashed, vis int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(visitor) FROM stats_events WHERE job_id = $1`, job).Scan(&raw, &hashed); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stats_visitors WHERE job_id = $1`, job).Scan(&vis); err != nil {
		t.Fatal(err)
	}
	if raw != 2 || hashed != 0 || vis != 0 {
		t.Errorf("after the purge: %d raw events (want 2, of 2 March), %d with a visitor hash, %d visitors (want 0, 0)", raw, hashed, vis)
	}
	again, err := s.Rows(ctx, job, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil || len(again) != len(rows) {
		t.Errorf("roll-ups after the purge: %d rows, want %d (%v)", len(again), len(rows), err)
	}
}
