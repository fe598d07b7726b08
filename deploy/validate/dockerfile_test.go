package validate

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One Dockerfile at the root builds any service's image (ARG SERVICE): every
// command of the service, non-root on a minimal base, the service's API
// server as the entrypoint; the build context (.dockerignore) keeps what the
// builds need.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"!libs/", "!api/", "!services/"} {
		if !strings.Contains(string(ignore), keep) {
			t.Errorf(".dockerignore does not keep %s", keep)
		}
	}
	if old, _ := filepath.Glob(filepath.Join(root, "services", "*", "Dockerfile")); len(old) > 0 {
		t.Errorf("per-service Dockerfiles beside the root one: %v", old)
	}
	lines := dockerfileLines(t, filepath.Join(root, "Dockerfile"))
	for _, svc := range apis {
		t.Run(svc, func(t *testing.T) {
			var from []string
			var user, entry, link string
			args := map[string]bool{} // the ARGs declared in the current stage
			builds, tagged := false, false
			expand := strings.NewReplacer("${SERVICE}", svc, "$SERVICE", svc)
			for _, line := range lines {
				fields := strings.Fields(line)
				switch strings.ToUpper(fields[0]) {
				case "FROM":
					from = append(from, fields[1])
					args = map[string]bool{}
				case "ARG":
					args[strings.SplitN(fields[1], "=", 2)[0]] = true
				case "USER":
					user = fields[1]
				case "ENTRYPOINT":
					entry = strings.Join(fields[1:], " ")
				case "COPY":
					if strings.HasPrefix(fields[1], "--from") {
						continue
					}
					for _, src := range fields[1 : len(fields)-1] {
						matches, _ := filepath.Glob(filepath.Join(root, expand.Replace(src)))
						if len(matches) == 0 {
							t.Errorf("COPY %s: nothing there for %s", src, svc)
						}
					}
				}
				if strings.Contains(line, "SERVICE") && !strings.HasPrefix(line, "ARG ") && !args["SERVICE"] {
					t.Errorf("uses SERVICE in a stage that does not declare it: %s", line)
				}
				if strings.Contains(line, "go build") && strings.Contains(line, "./cmd/...") && strings.Contains(line, "-o /out/") {
					builds = true
				}
				if i := strings.Index(line, "ln -s "); i >= 0 {
					link = strings.Join(strings.Fields(expand.Replace(line[i:]))[2:4], " ")
				}
				if strings.HasPrefix(line, "ENV ") && strings.Contains(line, "-tags=grpcnotrace") {
					tagged = true
				}
			}
			if len(from) < 2 || !strings.Contains(from[len(from)-1], "distroless/static") || !strings.HasSuffix(from[len(from)-1], ":nonroot") {
				t.Errorf("want a multi-stage build ending on distroless static nonroot, got %v", from)
			}
			if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
				t.Errorf("USER %q: not a non-root user", user)
			}
			if !builds {
				t.Error("does not build every command (go build -o /out/ ./cmd/...)")
			}
			if !tagged {
				t.Error("does not build with -tags=grpcnotrace (GO_TAGS in the Makefile)")
			}
			// The exec-form ENTRYPOINT is fixed; the link it runs names the
			// service's main command.
			if entry != `["/app/entrypoint"]` || link != svc+" /out/entrypoint" {
				t.Errorf("ENTRYPOINT %s runs %q, want the link to %s", entry, link, svc)
			}
			if fi, err := os.Stat(filepath.Join(root, "services", svc, "cmd", svc)); err != nil || !fi.IsDir() {
				t.Errorf("no main command cmd/%s", svc)
			}
		})
	}
}

// dockerfileLines reads a Dockerfile's instructions, continuation lines
// joined, comments and blank lines left out.
func dockerfileLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every way the services are built uses the grpcnotrace tag: without it the
// binaries are a third larger, and so is their resident memory (GO_TAGS in
// the Makefile says why). The Dockerfile is checked above.
func TestBuildsUseGRPCNoTrace(t *testing.T) {
	root := repoRoot(t)
	for file, want := range map[string]string{
		"Makefile":             "GO_TAGS := grpcnotrace",
		"Tiltfile":             "go build -trimpath -tags=grpcnotrace",
		"scripts/run.sh":       "go install -tags grpcnotrace $S/",
		"tests/suite/suite.go": `"go", "build", "-tags", "grpcnotrace"`,
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: the services' build lacks the grpcnotrace tag (want %q)", file, want)
		}
	}
	// make run builds the services in several steps (the APIs first): each
	// one that builds a command of ours carries the tag.
	b, err := os.ReadFile(filepath.Join(root, "scripts", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "go install") && strings.Contains(line, "$S/") && !strings.Contains(line, "-tags grpcnotrace") {
			t.Errorf("scripts/run.sh:%d: a build of the services without the grpcnotrace tag: %s", i+1, line)
		}
	}
}
