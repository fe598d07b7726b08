package prometheus

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// query is one PromQL expression of a dashboard: a panel target or a
// templating variable.
type dashQuery struct {
	Where string // dashboard file › panel title › legend
	Expr  string
}

type dashPanel struct {
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Targets []dashExpr  `json:"targets"`
	Panels  []dashPanel `json:"panels"` // a collapsed row keeps its panels here
}

type dashExpr struct {
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	RefID        string `json:"refId"`
}

type dashboard struct {
	Title      string      `json:"title"`
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Query    any    `json:"query"` // a string, or an object in newer Grafana versions
			AllValue string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

// dashboards reads every dashboard the chart ships and returns the panel
// queries and the query variables' label_values() of each.
func dashboards(t *testing.T) (panels, variables []dashQuery) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "charts", "coworkjobs", "files", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in the chart: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var walk func([]dashPanel)
		walk = func(ps []dashPanel) {
			for _, p := range ps {
				for _, tg := range p.Targets {
					if strings.TrimSpace(tg.Expr) == "" {
						t.Errorf("%s › %s: a target without a query", filepath.Base(f), p.Title)
						continue
					}
					panels = append(panels, dashQuery{Where: fmt.Sprintf("%s › %s › %q", filepath.Base(f), p.Title, tg.LegendFormat), Expr: tg.Expr})
				}
				if p.Type != "row" && p.Type != "text" && len(p.Targets) == 0 {
					t.Errorf("%s › %s: a panel without queries", filepath.Base(f), p.Title)
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(string)
			if m, ok := v.Query.(map[string]any); ok {
				q, _ = m["query"].(string)
			}
			variables = append(variables, dashQuery{Where: fmt.Sprintf("%s › variable %s", filepath.Base(f), v.Name), Expr: q})
		}
	}
	return panels, variables
}

var dashVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)`)

// substitute replaces Grafana's variables the way Grafana would for the
// values given ("All" of a multi-value variable is its allValue, ".*").
func substitute(expr string, values map[string]string) (string, error) {
	var missing []string
	out := dashVar.ReplaceAllStringFunc(expr, func(m string) string {
		s := dashVar.FindStringSubmatch(m)
		name := s[1] + s[2] + s[3]
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unknown variables %v", missing)
	}
	return out, nil
}

var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.*?)\s*,\s*(\w+)\s*\)\s*$`)

// variableValues runs a label_values(selector, label) variable query the
// way Grafana's Prometheus data source does (the series API with a match[]).
func (p *prom) variableValues(expr string) ([]string, error) {
	m := labelValues.FindStringSubmatch(expr)
	if m == nil {
		return nil, fmt.Errorf("not a label_values(selector, label) query: %s", expr)
	}
	var out []string
	err := p.api("/api/v1/label/"+m[2]+"/values", url.Values{"match[]": {m[1]}}, &out)
	return out, err
}
