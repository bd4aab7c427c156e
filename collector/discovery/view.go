package discovery

import (
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// View is what service discovery made of the targets of its last update,
// per source (each discovery block, and each file of a block that reads
// files): every backend with the labels it was discovered with, and the
// dropped targets, the first maxShownDropped of them and an example of
// every reason, with why. Every label value and error has its passwords
// redacted. Only the configured blocks are shown.
type View struct {
	Sources []SourceView `json:"sources"`
	// Target, when the view was asked for one target, is what was asked
	// for: Sources then hold the sources that list it, with only the
	// targets that match it, found among every target of the last update
	// whatever the caps.
	Target string `json:"target,omitempty"`
}

// SourceView is one source's targets.
type SourceView struct {
	Mechanism string `json:"mechanism"`
	// Config is the discovery block, such as file_sd_configs[0], and
	// ConfigFile and ConfigLine where it is written.
	Config     string `json:"config"`
	ConfigFile string `json:"config_file,omitempty"`
	ConfigLine int    `json:"config_line,omitempty"`
	// File, for a mechanism that reads files, is the file.
	File string `json:"file,omitempty"`
	// Targets is how many targets the source discovered, Backends how
	// many became backends.
	Targets  int `json:"targets"`
	Backends int `json:"backends"`
	// DroppedCounts has how many targets were dropped for each reason,
	// all of them, shown or not.
	DroppedCounts map[string]int `json:"dropped_counts"`
	// MaxShownDropped is how many dropped targets are kept for the view,
	// besides one example of each reason.
	MaxShownDropped int          `json:"max_shown_dropped"`
	Active          []TargetView `json:"active_targets"`
	Dropped         []TargetView `json:"dropped_targets"`
}

// TargetView is one discovered target.
type TargetView struct {
	// Source is the target group that listed it, as its mechanism names
	// it (a file and the group's index, a DNS name).
	Source string `json:"source"`
	// File and Line locate the group in a file the mechanism reads: the
	// line where the group begins.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Labels are the labels discovered, before relabelling.
	Labels map[string]string `json:"discovered_labels"`
	// Backend, URL and ProbePath are the backend it became, or for a
	// target dropped for its name or the limit, the one it would have.
	Backend   string `json:"backend,omitempty"`
	URL       string `json:"url,omitempty"`
	ProbePath string `json:"probe_path,omitempty"`
	// Reason is why it was dropped: relabel, invalid, name_clash, limit
	// or loop; empty for a backend.
	Reason string `json:"reason,omitempty"`
	// Error says what is wrong with an invalid target.
	Error string `json:"error,omitempty"`
}

// View is what the last call of Targets made of the discovered targets.
// With target not empty, it holds only the targets whose discovered
// address, or whose backend's name or host:port, holds target in any case
// (targetQuery: a URL stands for its host:port).
func (d *Discovery) View(target string) View {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := View{Sources: []SourceView{}, Target: target}
	var found map[*tally][]*record
	if target != "" {
		found = d.search(target)
	}
	lines := groupLines{}
	for _, s := range d.sources {
		for _, t := range s.tallies {
			if target != "" && len(found[t]) == 0 {
				continue
			}
			sv := SourceView{Mechanism: s.mechanism, Config: t.field, File: t.file, Targets: t.total,
				DroppedCounts: make(map[string]int, len(dropReasons)), MaxShownDropped: maxShownDropped,
				Active: []TargetView{}, Dropped: []TargetView{}}
			if d.cfg != nil {
				sv.ConfigFile = d.cfg.File()
				if sv.ConfigFile != "" {
					sv.ConfigLine = d.cfg.ProblemAt(t.field, "").Line
				}
			}
			for _, reason := range dropReasons {
				sv.DroppedCounts[reason] = t.counts[reason]
			}
			for _, r := range s.backends {
				if r.tally == t {
					sv.Backends++
					if target == "" {
						sv.Active = append(sv.Active, r.view(lines))
					}
				}
			}
			shown := t.dropped
			if target != "" {
				shown = found[t]
			}
			for _, r := range shown {
				if r.reason == "" {
					sv.Active = append(sv.Active, r.view(lines))
				} else {
					sv.Dropped = append(sv.Dropped, r.view(lines))
				}
			}
			v.Sources = append(v.Sources, sv)
		}
	}
	return v
}

// maxFound bounds the targets a search answers per source: an address
// listed a million times is answered with its first ones.
const maxFound = maxShownDropped

// search finds the targets of the last update that match target
// (targetQuery), among
// all of them, and says what became of each: it evaluates them again
// under the configuration of the last call of Targets. Call it with mu
// held.
func (d *Discovery) search(target string) map[*tally][]*record {
	found := map[*tally][]*record{}
	query := queryOf(target)
	if d.cfg == nil || query == "" {
		return found
	}
	kept := map[string]*record{}
	tallies := make([]map[origin]*tally, len(d.sources))
	for i, s := range d.sources {
		for _, r := range s.backends {
			kept[r.target.Name] = r
		}
		tallies[i] = make(map[origin]*tally, len(s.tallies))
		for _, t := range s.tallies {
			tallies[i][t.origin] = t
		}
	}
	clashed := map[string]bool{}
	for c := range d.clashed {
		clashed[c.mechanism+"\x00"+c.name] = true
	}
	for i, mg := range d.groupsOf(d.cfg) {
		if i >= len(tallies) {
			break
		}
		for _, g := range mg.groups {
			t := tallies[i][mg.origins[g]]
			if t == nil || len(found[t]) >= maxFound {
				continue
			}
			for _, own := range g.Targets {
				address := own[addressLabel]
				if address == "" {
					address = g.Labels[addressLabel]
				}
				backend, keep, err := targetOf(g.Labels, own, d.cfg)
				if other := mg.alsoKeptBy[g]; other != nil && err == nil && keep {
					if _, keptToo, errToo := targetOf(g.Labels, own, other); errToo != nil || !keptToo {
						keep = false
					}
				}
				if !query.matches(string(address), backend.Name, hostOf(backend.URL)) {
					continue
				}
				r := &record{source: g.Source, tally: t, group: g.Labels, own: own, target: backend}
				switch {
				case err != nil:
					r.reason, r.err, r.cause = dropInvalid, invalidTarget(own, groupPlace(g.Source, t.file), err).Error(), err
				case !keep:
					r.reason = dropRelabel
				case d.isLoop != nil && d.isLoop(backend.URL):
					r.reason = dropLoop
				case kept[backend.Name] != nil && kept[backend.Name].tally == t && kept[backend.Name].target.URL == backend.URL:
				case clashed[mechanisms[i].name+"\x00"+backend.Name]:
					r.reason = dropNameClash
				default:
					r.reason = dropLimit
				}
				found[t] = append(found[t], r)
				if len(found[t]) >= maxFound {
					break
				}
			}
		}
	}
	return found
}

// hostOf is the host:port of a backend URL.
func hostOf(backendURL string) string {
	u, err := url.Parse(backendURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// view is the record as the view shows it.
func (r *record) view(lines groupLines) TargetView {
	v := TargetView{Source: r.source, Labels: r.labels(), Backend: r.target.Name, URL: r.target.URL,
		ProbePath: r.target.Probe.Path, Reason: r.reason, Error: r.err}
	if r.tally != nil && r.tally.file != "" {
		v.File = r.tally.file
		if index, err := strconv.Atoi(strings.TrimPrefix(r.source, r.tally.file+":")); err == nil {
			v.Line = lines.line(r.tally.file, index)
		}
		if v.Line > 0 && r.cause != nil {
			v.Error = invalidTarget(r.own, linePlace(v.File, v.Line), r.cause).Error()
		}
	}
	return v
}

// maxGroupFileBytes bounds how much of a target file is read to find the
// lines of its groups.
const maxGroupFileBytes = 64 << 20

// groupLines are the lines where each target group of a file begins,
// read once per file for one view: a YAML or JSON file of groups is a
// list, and the line of its n-th item is the line of group n.
type groupLines map[string][]int

// line is the line of group index in file, 0 when unknown.
func (g groupLines) line(file string, index int) int {
	lines, ok := g[file]
	if !ok {
		lines = readGroupLines(file)
		g[file] = lines
	}
	if index < 0 || index >= len(lines) {
		return 0
	}
	return lines[index]
}

// readGroupLines is the line of every item of the list file holds, or
// nil when it cannot be read.
func readGroupLines(file string) []int {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGroupFileBytes))
	if err != nil {
		return nil
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.SequenceNode {
		return nil
	}
	items := doc.Content[0].Content
	lines := make([]int, len(items))
	for i, item := range items {
		lines[i] = item.Line
	}
	return lines
}
