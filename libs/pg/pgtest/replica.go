package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/coworkjobs/coworkjobs/libs/pg"
)

// Bin finds the newest /usr/lib/postgresql/*/bin with initdb (Debian's
// layout; PG_BIN overrides it, and initdb on PATH is the last resort).
func Bin() (string, error) {
	if b := os.Getenv("PG_BIN"); b != "" {
		return b, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtest: no initdb (install postgresql, or set PG_BIN)")
}

// Replicated is a private primary and its streaming replica, each on its
// own free loopback port in a temp directory, with database coworkjobs.
type Replicated struct {
	PrimaryURL, ReplicaURL string

	dir, bin string
	asUser   []string // runuser as root: PostgreSQL refuses to run as root
	replica  server
}

type server struct{ data, log string }

// Replica starts a primary (initdb: trust on loopback, replication
// allowed) and a replica made from it with pg_basebackup -R -X stream, and
// returns once the replica is in recovery and streaming. Both are stopped
// (by the pids in their postmaster.pid) and removed when tb ends.
func Replica(tb testing.TB) *Replicated {
	tb.Helper()
	bin, err := Bin()
	if err != nil {
		tb.Skip(err)
	}
	dir, err := os.MkdirTemp("", "pgtest-replica")
	if err != nil {
		tb.Fatal(err)
	}
	r := &Replicated{dir: dir, bin: bin}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("pgtest: running as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			tb.Fatal(err)
		}
		r.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	primary := server{data: filepath.Join(dir, "primary"), log: filepath.Join(dir, "primary.log")}
	if out, err := r.tool(ctx, "initdb", "-D", primary.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--no-sync", "--no-instructions"); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	pport := r.start(tb, ctx, primary)
	r.PrimaryURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/coworkjobs?sslmode=disable", pport)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pport))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE coworkjobs"); err != nil {
		tb.Fatal(err)
	}

	r.replica = server{data: filepath.Join(dir, "replica"), log: filepath.Join(dir, "replica.log")}
	if out, err := r.tool(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(pport), "-U", "postgres",
		"-D", r.replica.data, "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		tb.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	rport := r.start(tb, ctx, r.replica)
	r.ReplicaURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/coworkjobs?sslmode=disable", rport)
	for {
		var recovering bool
		var streaming int
		err := r.Exec(ctx, r.ReplicaURL, `SELECT pg_is_in_recovery()`, &recovering)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'`).Scan(&streaming)
		}
		if err == nil && recovering && streaming > 0 {
			return r
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("pgtest: the replica is not streaming (%v)\n%s", err, r.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *Replicated) tool(ctx context.Context, name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, r.asUser...), filepath.Join(r.bin, name)), args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

// start starts s on a free port and stops it when tb ends.
func (r *Replicated) start(tb testing.TB, ctx context.Context, s server) int {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	// No autovacuum: a vacuum's truncation holds an exclusive lock that the
	// replica replays, and a replay paused inside it would block the reads.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c autovacuum=off", port, r.dir)
	if out, err := r.tool(ctx, "pg_ctl", "-D", s.data, "-l", s.log, "-o", opts, "-w", "-t", "60", "start"); err != nil {
		tb.Fatalf("pg_ctl start: %v\n%s", err, out)
	}
	tb.Cleanup(func() { r.stop(s) })
	return port
}

// stop ends s at once (pg_ctl signals the pid in its postmaster.pid).
func (r *Replicated) stop(s server) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = r.tool(ctx, "pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop")
}

// StopReplica stops the replica (an immediate shutdown: connections break).
func (r *Replicated) StopReplica() { r.stop(r.replica) }

// Exec runs one statement on the server at url, scanning its row into dst
// when given.
func (r *Replicated) Exec(ctx context.Context, url, sql string, dst ...any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if len(dst) == 0 {
		_, err = conn.Exec(ctx, sql)
		return err
	}
	return conn.QueryRow(ctx, sql).Scan(dst...)
}

// PauseReplay stops the replica applying WAL (pg_wal_replay_pause): what
// it answers stays as it is while the primary moves on.
func (r *Replicated) PauseReplay(tb testing.TB) { r.replay(tb, "pause") }

// ResumeReplay lets the replica catch up again.
func (r *Replicated) ResumeReplay(tb testing.TB) { r.replay(tb, "resume") }

func (r *Replicated) replay(tb testing.TB, what string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Exec(ctx, r.ReplicaURL, "SELECT pg_wal_replay_"+what+"()"); err != nil {
		tb.Fatalf("pg_wal_replay_%s: %v", what, err)
	}
	// A pause is requested, then taken between two WAL records.
	for what == "pause" {
		var state string
		if err := r.Exec(ctx, r.ReplicaURL, "SELECT pg_get_wal_replay_pause_state()", &state); err != nil {
			tb.Fatalf("pg_get_wal_replay_pause_state: %v", err)
		}
		if state == "paused" {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Log is the two servers' logs, for a failure's message.
func (r *Replicated) Log() string {
	p, _ := os.ReadFile(filepath.Join(r.dir, "primary.log"))
	s, _ := os.ReadFile(filepath.Join(r.dir, "replica.log"))
	return "primary:\n" + string(p) + "\nreplica:\n" + string(s)
}

// freePort picks a loopback port below the ephemeral range that nobody
// listens on now.
func freePort() (int, error) {
	for range 200 {
		port := 20000 + rand.IntN(12000)
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			ln.Close()
			return port, nil
		}
	}
	return 0, errors.New("pgtest: no free port between 20000 and 32000")
}

// Routed is a replicated pair for a service's store tests: schema migrated
// on the primary and replayed on the replica, a pool on each (search_path
// schema, closed at cleanup) and the pg.Reads that routes between them.
func Routed(tb testing.TB, schema string, migrations fs.FS) (*Replicated, *pgxpool.Pool, *pg.Reads) {
	tb.Helper()
	rep := Replica(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(url string) *pgxpool.Pool {
		p, err := pg.Open(ctx, url, schema, pg.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(p.Close)
		return p
	}
	primary, replica := open(rep.PrimaryURL), open(rep.ReplicaURL)
	log := slog.New(slog.DiscardHandler)
	if err := pg.Migrate(ctx, primary, schema, migrations, log); err != nil {
		tb.Fatal(err)
	}
	reads := pg.NewReads(primary, replica, log)
	rep.WaitReplayed(tb, primary, reads)
	return rep, primary, reads
}

// WaitReplayed waits until a read routed by reads after everything the
// primary has written so far lands on the replica (at most a minute).
func (r *Replicated) WaitReplayed(tb testing.TB, primary *pgxpool.Pool, reads *pg.Reads) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lsn pg.LSN
	if err := primary.QueryRow(ctx, `SELECT `+pg.LSNSQL(`pg_current_wal_insert_lsn()`)).Scan(&lsn); err != nil {
		tb.Fatal(err)
	}
	for {
		onReplica := false
		if err := reads.Read(ctx, lsn, func(p *pgxpool.Pool) error { onReplica = p != primary; return nil }); err != nil {
			tb.Fatal(err)
		}
		if onReplica {
			return
		}
		if ctx.Err() != nil {
			tb.Fatal("the replica did not replay the primary's writes within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CheckRoutedReads proves on a real replica (Routed) that a store sends its
// reads through pg.Reads. write stores rows on the primary while the
// replica's replay is paused and returns how many a read should then see;
// read reads through a store routed by reads and returns how many it saw.
// Paused, every read is answered by the replica and sees none; caught up,
// it sees them all; once the replica stops, the reads fall back to the
// primary and still see them all.
func CheckRoutedReads(tb testing.TB, schema string, migrations fs.FS,
	write func(ctx context.Context, primary *pgxpool.Pool) (int, error),
	read func(ctx context.Context, primary *pgxpool.Pool, reads *pg.Reads) (int, error)) {
	tb.Helper()
	rep, primary, reads := Routed(tb, schema, migrations)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	counters := func() (replica, other float64) {
		return counterValue(reads.Counter(pg.ReadReplica)),
			counterValue(reads.Counter(pg.ReadPrimary)) + counterValue(reads.Counter(pg.ReadFallback))
	}

	rep.PauseReplay(tb)
	want, err := write(ctx, primary)
	if err != nil || want == 0 {
		tb.Fatalf("the primary holds %d rows to read (%v)", want, err)
	}
	replicaBefore, otherBefore := counters()
	if n, err := read(ctx, primary, reads); err != nil || n != 0 {
		tb.Fatalf("with replay paused the routed reads saw %d rows (%v): not read on the replica", n, err)
	}
	if replicaAfter, otherAfter := counters(); replicaAfter == replicaBefore || otherAfter != otherBefore {
		tb.Fatalf("with replay paused %g reads went to the replica and %g elsewhere, want all on the replica",
			replicaAfter-replicaBefore, otherAfter-otherBefore)
	}

	rep.ResumeReplay(tb)
	rep.WaitReplayed(tb, primary, reads)
	if n, err := read(ctx, primary, reads); err != nil || n != want {
		tb.Fatalf("caught up, the routed reads saw %d rows (%v), want %d", n, err, want)
	}

	rep.StopReplica()
	if n, err := read(ctx, primary, reads); err != nil || n != want {
		tb.Fatalf("with the replica stopped the routed reads saw %d rows (%v), want %d", n, err, want)
	}
	if n := counterValue(reads.Counter(pg.ReadFallback)); n < 1 {
		tb.Fatalf("fallback reads %g, want at least 1", n)
	}
}

// counterValue reads c (prometheus/testutil would pull its test-only
// dependencies into every module that uses pgtest).
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
