package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// chartMemLimits are the GOMEMLIMITs the chart gives the services the bench
// starts (charts/coworkjobs/templates/_helpers.tpl, goRuntimeEnv: 90 % of a
// limit written in Mi or Gi), so that their memory is measured as it runs
// deployed (issue 48): by service, "GOMEMLIMIT=<n>MiB".
func chartMemLimits() (map[string][]string, error) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		return nil, fmt.Errorf("chart memory limits: go env GOWORK: %w", err)
	}
	if strings.TrimSpace(string(out)) == "" {
		return nil, errors.New("chart memory limits: no go.work")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "charts", "coworkjobs", "values.yaml"))
	if err != nil {
		return nil, fmt.Errorf("chart memory limits: %w", err)
	}
	var v struct {
		APIs map[string]struct {
			Resources struct {
				Limits struct {
					Memory string `json:"memory"`
				} `json:"limits"`
			} `json:"resources"`
		} `json:"apis"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("chart memory limits: %w", err)
	}
	env := map[string][]string{}
	for _, name := range services {
		mib, err := goMemLimitMiB(v.APIs[name].Resources.Limits.Memory)
		if err != nil {
			return nil, fmt.Errorf("chart memory limits: apis.%s: %w", name, err)
		}
		env[name] = []string{"GOMEMLIMIT=" + strconv.Itoa(mib) + "MiB"}
	}
	return env, nil
}

var quantity = regexp.MustCompile(`^([0-9]+)(Mi|Gi)$`)

// goMemLimitMiB is the chart's GOMEMLIMIT for a memory limit: 90 % of it.
func goMemLimitMiB(limit string) (int, error) {
	m := quantity.FindStringSubmatch(limit)
	if m == nil {
		return 0, fmt.Errorf("memory limit %q is not written in Mi or Gi", limit)
	}
	n, _ := strconv.Atoi(m[1])
	if m[2] == "Gi" {
		n *= 1024
	}
	return n * 9 / 10, nil
}
