package discovery

// View is what service discovery made of the targets of its last update,
// per mechanism: every backend with the labels it was discovered with,
// and the dropped targets, the first maxShownDropped of them, with why.
// Every label value and error has its passwords redacted.
type View struct {
	Sources []SourceView `json:"sources"`
}

// SourceView is one mechanism's targets.
type SourceView struct {
	Mechanism string `json:"mechanism"`
	// Targets is how many targets the mechanism discovered, Backends how
	// many became backends.
	Targets  int `json:"targets"`
	Backends int `json:"backends"`
	// DroppedCounts has how many targets were dropped for each reason,
	// all of them, shown or not.
	DroppedCounts map[string]int `json:"dropped_counts"`
	// MaxShownDropped is how many dropped targets are kept for the view.
	MaxShownDropped int          `json:"max_shown_dropped"`
	Active          []TargetView `json:"active_targets"`
	Dropped         []TargetView `json:"dropped_targets"`
}

// TargetView is one discovered target.
type TargetView struct {
	// Source is the target group that listed it, such as a file and index.
	Source string `json:"source"`
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
func (d *Discovery) View() View {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := View{Sources: make([]SourceView, 0, len(mechanisms))}
	for _, m := range mechanisms {
		sv := SourceView{Mechanism: m.name, DroppedCounts: make(map[string]int, len(dropReasons)),
			MaxShownDropped: maxShownDropped, Active: []TargetView{}, Dropped: []TargetView{}}
		for _, reason := range dropReasons {
			sv.DroppedCounts[reason] = 0
		}
		for _, s := range d.sources {
			if s.mechanism != m.name {
				continue
			}
			sv.Targets, sv.Backends = s.total, len(s.backends)
			for reason, n := range s.counts {
				sv.DroppedCounts[reason] = n
			}
			for _, r := range s.backends {
				sv.Active = append(sv.Active, r.view())
			}
			for _, r := range s.dropped {
				sv.Dropped = append(sv.Dropped, r.view())
			}
		}
		v.Sources = append(v.Sources, sv)
	}
	return v
}

// view is the record as the view shows it.
func (r *record) view() TargetView {
	return TargetView{Source: r.source, Labels: r.labels(), Backend: r.target.Name, URL: r.target.URL,
		ProbePath: r.target.Probe.Path, Reason: r.reason, Error: r.err}
}
