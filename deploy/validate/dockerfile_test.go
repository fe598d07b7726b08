package validate

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each service has a Dockerfile that builds every command of the service from
// the repository root and runs as non-root on a minimal base; the build
// context (.dockerignore) keeps what the builds need.
func TestDockerfiles(t *testing.T) {
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
	for _, svc := range apis {
		t.Run(svc, func(t *testing.T) {
			path := filepath.Join(root, "services", svc, "Dockerfile")
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var from []string
			var user, entry string
			builds, tagged := false, false
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				fields := strings.Fields(line)
				if len(fields) == 0 || strings.HasPrefix(line, "#") {
					continue
				}
				switch strings.ToUpper(fields[0]) {
				case "FROM":
					from = append(from, fields[1])
				case "USER":
					user = fields[1]
				case "ENTRYPOINT":
					entry = strings.Join(fields[1:], " ")
				case "COPY":
					if strings.HasPrefix(fields[1], "--from") {
						continue
					}
					for _, src := range fields[1 : len(fields)-1] {
						matches, _ := filepath.Glob(filepath.Join(root, src))
						if len(matches) == 0 {
							t.Errorf("COPY %s: nothing there", src)
						}
					}
				}
				if strings.Contains(line, "go build") && strings.Contains(line, "./cmd/...") && strings.Contains(line, "-o /out/") {
					builds = true
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
			if entry != `["/app/`+svc+`"]` {
				t.Errorf("ENTRYPOINT %s", entry)
			}
			cmds, _ := os.ReadDir(filepath.Join(root, "services", svc, "cmd"))
			if len(cmds) == 0 {
				t.Error("no commands")
			}
		})
	}
}

// Every way the services are built uses the grpcnotrace tag: without it the
// binaries are a third larger, and so is their resident memory (GO_TAGS in
// the Makefile says why). The Dockerfiles are checked above.
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
