// Package maintcli is `probegate maintenance start|stop|list`, the
// command-line client of a running probegate's admin API, and the offline
// stop that edits the storage directory of a stopped one. It speaks the
// API's own wire types (collector/maintenance, collector/admin), so the
// client and the server cannot drift apart.
package maintcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/cmd/probegate/internal/termsafe"
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/internal/jsonanswer"
	"github.com/probegate/probegate/internal/redact"
)

// CLI is `probegate maintenance`, the command-line client of the admin
// API. It exits 0 when the request did what it asked, 1 when probegate
// refused it (the readiness budget, an unknown backend), could not be
// reached or gave no answer in time, 2 for a usage error, 3 when list
// answered from a store it cannot vouch for (see staleStore), and 4 when
// probegate answered that it cannot do it now (see unavailable).
type CLI struct {
	start, stop, list *kingpin.CmdClause

	url            string
	httpConfigFile string
	// storagePath, for stop, ends the entry in a stopped probegate's
	// storage directory instead of asking a running one.
	storagePath string
	name        string
	reason      string
	ttl         string
	force       bool
	timeout     time.Duration
}

// DefaultURL is the admin listener's default address: the admin API is
// served there alone. On the host, or in the pod (kubectl exec), the CLI
// finds a probegate started with the defaults without --url, and through
// kubectl port-forward to that port as well.
const DefaultURL = "http://127.0.0.1:9799"

// Register adds `probegate maintenance start|stop|list` to app.
func Register(app *kingpin.Application) *CLI {
	c := &CLI{}
	cmd := app.Command("maintenance", "Take backends out of service for maintenance, under the readiness budget, through a running probegate's admin API.")
	cmd.Flag("url", "Base URL of the admin listener (--web.admin-listen-address) of the probegate to talk to; the default is where it listens by default.").
		Default(DefaultURL).StringVar(&c.url)
	cmd.Flag("http.config.file", "HTTP client configuration file (prometheus/common format) with the credentials and TLS settings for --url.").
		PlaceHolder("FILE").StringVar(&c.httpConfigFile)
	cmd.Flag("timeout", "Timeout of the request.").Default("30s").DurationVar(&c.timeout)

	c.start = cmd.Command("start", "Put a backend in maintenance. Refused (exit 1) when the readiness budget allows no disruption, unless --force.")
	c.start.Arg("name", "Backend name.").Required().StringVar(&c.name)
	c.start.Flag("reason", "Why the backend goes out; stored with the maintenance.").Required().StringVar(&c.reason)
	c.start.Flag("ttl", "End the maintenance by itself after this long, such as 2h or 1d.").StringVar(&c.ttl)
	c.start.Flag("force", "Override the readiness budget.").BoolVar(&c.force)

	c.stop = cmd.Command("stop", "End a backend's maintenance; it is readmitted once its probes show it healthy.")
	c.stop.Arg("name", "Backend name.").Required().StringVar(&c.name)
	c.stop.Flag("storage.path", "End the maintenance offline, in this storage directory of a probegate that is not running (for one whose admin API is off). Refused while a probegate holds the directory.").
		PlaceHolder("DIR").StringVar(&c.storagePath)

	c.list = cmd.Command("list", "List the backends with their state and maintenance.")
	c.list.Arg("name", "Only this backend.").StringVar(&c.name)
	return c
}

// errRefused is a request probegate answered but did not grant.
var errRefused = errors.New("refused")

// usageError is a mistake in the command line.
type usageError struct{ error }

// staleStore is a list that was printed, but from a maintenance store
// probegate cannot reach, or from the state it saved before: another
// replica may have started or ended a maintenance since. A script that
// decides from the list must not take it for the truth, so the command
// warns and exits 3.
type staleStore struct{ error }

// unavailable is a 503 from probegate: it was reached, but cannot do
// what was asked now, most often because its maintenance store cannot be
// reached; the server's own words say which. A script retries after
// retryAfter rather than take it for a refusal or for probegate being
// down, so the command exits 4.
type unavailable struct {
	said       string
	retryAfter string
}

func (u unavailable) Error() string {
	retry := ""
	if u.retryAfter != "" {
		retry = "; retry in " + u.retryAfter + "s"
	}
	return "probegate cannot do it now (503 Service Unavailable): " + u.said + retry
}

// answerError is the error of an answer other than the one expected: a
// 503 is unavailable, anything else a refusal.
func answerError(resp *http.Response, data []byte) error {
	if resp.StatusCode == http.StatusServiceUnavailable {
		return unavailable{said: apiError(data), retryAfter: resp.Header.Get("Retry-After")}
	}
	return fmt.Errorf("%w: %s: %s", errRefused, resp.Status, apiError(data))
}

// Handles reports whether command, as app.Parse returned it, is one of
// the maintenance commands.
func (c *CLI) Handles(command string) bool {
	return command == c.start.FullCommand() || command == c.stop.FullCommand() || command == c.list.FullCommand()
}

// Run runs one maintenance command and returns the exit code.
func (c *CLI) Run(command string, stdout, stderr io.Writer) int {
	err := c.do(command, stdout)
	var usage usageError
	var stale staleStore
	var busy unavailable
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		termsafe.Fprintf(stderr, "probegate %s: %v\n", command, err)
		return 2
	case errors.As(err, &busy):
		termsafe.Fprintf(stderr, "probegate %s: %v\n", command, err)
		return 4
	case errors.As(err, &stale):
		termsafe.Fprintf(stderr, "probegate %s: warning: %v\n", command, err)
		return 3
	default:
		termsafe.Fprintf(stderr, "probegate %s: %v\n", command, err)
		return 1
	}
}

func (c *CLI) do(command string, stdout io.Writer) error {
	if command == c.stop.FullCommand() && c.storagePath != "" {
		return c.stopOffline(stdout)
	}
	base, err := url.Parse(c.url)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return usageError{fmt.Errorf("--url %q: want an http or https URL such as %s", redact.URL(c.url), DefaultURL)}
	}
	httpCfg := &commoncfg.DefaultHTTPClientConfig
	if c.httpConfigFile != "" {
		if httpCfg, _, err = commoncfg.LoadHTTPConfigFile(c.httpConfigFile); err != nil {
			return usageError{fmt.Errorf("--http.config.file: %w", err)}
		}
	}
	client, err := commoncfg.NewClientFromConfig(*httpCfg, "probegate")
	if err != nil {
		return usageError{fmt.Errorf("--http.config.file %s: %w", c.httpConfigFile, err)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	api := apiClient{client: client, base: strings.TrimRight(base.String(), "/"), timeout: c.timeout}
	switch command {
	case c.start.FullCommand():
		return c.doStart(ctx, api, stdout)
	case c.stop.FullCommand():
		return c.doStop(ctx, api, stdout)
	default:
		return c.doList(ctx, api, stdout)
	}
}

func (c *CLI) doStart(ctx context.Context, api apiClient, stdout io.Writer) error {
	if strings.TrimSpace(c.reason) == "" {
		return usageError{errors.New("--reason must say why the backend goes out")}
	}
	if c.ttl != "" {
		if err := checkTTL(c.ttl); err != nil {
			return usageError{err}
		}
	}
	body, _ := json.Marshal(maintenance.Request{Reason: c.reason, TTL: c.ttl})
	path := maintenance.MaintenancePath(c.name)
	if c.force {
		path += "?force=true"
	}
	resp, data, err := api.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var got maintenance.Entered
		if err := json.Unmarshal(data, &got); err != nil {
			return fmt.Errorf("unexpected answer from %s: %w", api.base, err)
		}
		until := "until stopped"
		if !got.Maintenance.Until.IsZero() {
			until = "until " + got.Maintenance.Until.Local().Format(time.RFC3339)
		}
		termsafe.Fprintf(stdout, "%s is in maintenance %s (reason: %s)\n", c.name, until, got.Maintenance.Reason)
		if got.Forced {
			termsafe.Fprintf(stdout, "forced against the readiness budget: %s\n", budgetText(got.Readiness))
		}
		return nil
	case http.StatusTooManyRequests:
		var refused maintenance.Refused
		json.Unmarshal(data, &refused)
		retry := resp.Header.Get("Retry-After")
		if g := refused.Group; g != nil {
			return fmt.Errorf("%w: the budget of replica group %q allows no disruption (%s); retry in %ss or use --force",
				errRefused, g.Name, budgetText(g.Budget), retry)
		}
		return fmt.Errorf("%w: the readiness budget allows no disruption (%s); retry in %ss or use --force", errRefused, budgetText(refused.Budget), retry)
	case http.StatusBadRequest:
		return usageError{errors.New(apiError(data))}
	default:
		return answerError(resp, data)
	}
}

func (c *CLI) doStop(ctx context.Context, api apiClient, stdout io.Writer) error {
	resp, data, err := api.do(ctx, http.MethodDelete, maintenance.MaintenancePath(c.name), nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return answerError(resp, data)
	}
	var got maintenance.Ended
	if err := json.Unmarshal(data, &got); err != nil {
		return fmt.Errorf("unexpected answer from %s: %w", api.base, err)
	}
	return printEnded(stdout, c.name, got)
}

// printEnded says what a DELETE did, for the API client and the offline
// stop alike.
func printEnded(stdout io.Writer, name string, got maintenance.Ended) error {
	switch {
	case !got.WasInMaintenance:
		termsafe.Fprintf(stdout, "%s was not in maintenance\n", name)
	case !got.Saved:
		termsafe.Fprintf(stdout, "%s left maintenance here, but the store has not recorded it yet; probegate retries\n", name)
	case got.State == "unhealthy":
		termsafe.Fprintf(stdout, "%s left maintenance; it is unhealthy until its probes show it back\n", name)
	case got.State == "":
		termsafe.Fprintf(stdout, "%s left maintenance (the backend is not configured now)\n", name)
	default:
		termsafe.Fprintf(stdout, "%s left maintenance; state %s\n", name, got.State)
	}
	return nil
}

func (c *CLI) doList(ctx context.Context, api apiClient, stdout io.Writer) error {
	resp, data, err := api.do(ctx, http.MethodGet, maintenance.BackendsPath, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return answerError(resp, data)
	}
	var got maintenance.List
	if err := json.Unmarshal(data, &got); err != nil {
		return fmt.Errorf("unexpected answer from %s: %w", api.base, err)
	}
	stale := storeWarning(got.Store)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tIN SERVICE\tREASON\tSINCE\tUNTIL\tBY")
	found := false
	row := func(name, state, inService string, m *entries.Entry) {
		if c.name != "" && name != c.name {
			return
		}
		found = true
		reason, since, until, by := "-", "-", "-", "-"
		if m != nil {
			reason, since, by = m.Reason, m.Since.Local().Format(time.RFC3339), m.By
			if !m.Until.IsZero() {
				until = m.Until.Local().Format(time.RFC3339)
			}
		}
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, state, inService, reason, since, until, by)
	}
	for _, b := range got.Backends {
		inService := "no"
		if b.InService {
			inService = "yes"
		}
		row(b.Name, b.State, inService, b.Maintenance)
	}
	for i := range got.Absent {
		row(got.Absent[i].Backend, "(not configured)", "-", &got.Absent[i])
	}
	if c.name != "" && !found {
		return fmt.Errorf("%w: no backend named %q", errRefused, c.name)
	}
	tw.Flush()
	if c.name == "" {
		termsafe.Fprintf(stdout, "\nreadiness: %s\n", budgetText(got.Readiness))
	}
	return stale
}

// storeWarning is a staleStore error when the list's store status says
// the answer may be out of date: the store is unhealthy, or the entries
// are from the state probegate saved (stale); nil otherwise.
func storeWarning(st maintenance.StoreStatus) error {
	switch {
	case !st.Healthy && st.Error != "":
		return staleStore{fmt.Errorf("the %s maintenance store is unhealthy (%s): this list is the last state probegate knew and may be out of date", st.Kind, st.Error)}
	case !st.Healthy:
		return staleStore{fmt.Errorf("the %s maintenance store is unhealthy: this list is the last state probegate knew and may be out of date", st.Kind)}
	case st.Stale:
		return staleStore{fmt.Errorf("this list is from the state probegate saved, not from the %s maintenance store: it may be out of date", st.Kind)}
	}
	return nil
}

// longestTTL is the longest --ttl the client sends. No maintenance lasts
// ten years: a ttl this long is a slipped unit, and one that ends beyond
// Go's time range would not end at all.
const longestTTL = 10 * 365 * 24 * time.Hour

// checkTTL says what is wrong with a --ttl value, or nil.
func checkTTL(ttl string) error {
	const want = "want a positive duration such as 30m, 2h or 1d"
	if strings.HasPrefix(ttl, "-") {
		return fmt.Errorf("--ttl %q is negative: %s; a maintenance until stopped takes no --ttl", ttl, want)
	}
	d, err := model.ParseDuration(ttl)
	switch {
	case err != nil && strings.Contains(err.Error(), "out of range"):
		return fmt.Errorf("--ttl %q is too long: at most 10y", ttl)
	case err != nil:
		return fmt.Errorf("--ttl %q: %s", ttl, want)
	case d == 0:
		return fmt.Errorf("--ttl %q is zero: %s; a maintenance until stopped takes no --ttl", ttl, want)
	case time.Duration(d) > longestTTL:
		return fmt.Errorf("--ttl %q is longer than 10y: no maintenance lasts that long; %s", ttl, want)
	}
	return nil
}

func budgetText(b budget.Budget) string {
	return fmt.Sprintf("expected=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
		b.Expected, b.CurrentHealthy, b.DesiredHealthy, b.DisruptionsAllowed)
}

// apiError is the error message of a JSON error answer, or the answer.
func apiError(data []byte) string {
	var e jsonanswer.Error
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(data))
}

// apiClient sends requests to a probegate's admin API.
type apiClient struct {
	client *http.Client
	base   string
	// timeout is --timeout, which bounds each request.
	timeout time.Duration
}

// do sends one request and reads the answer, at most 4 MiB of it.
func (a apiClient) do(ctx context.Context, method, path string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, usageError{err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Whether the request was sent tells a probegate that cannot be
	// reached from one that took the request and gave no answer in time
	// (waiting on its store, say), which may still act on it.
	var sent atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { sent.Store(true) },
	}))
	resp, err := a.client.Do(req)
	switch {
	case err != nil && sent.Load() && ctx.Err() != nil:
		return nil, nil, fmt.Errorf("probegate at %s took the request but gave no answer within %s (--timeout): it may still take effect; see probegate maintenance list", redact.URL(a.base), a.timeout)
	case err != nil && sent.Load():
		return nil, nil, fmt.Errorf("probegate at %s took the request but gave no answer: %w; it may have taken effect: see probegate maintenance list", redact.URL(a.base), err)
	case err != nil:
		return nil, nil, fmt.Errorf("cannot reach probegate at %s: %w (its admin listener is open only with --web.enable-admin-api or --web.enable-lifecycle)", redact.URL(a.base), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("read the answer of %s: %w", a.base, err)
	}
	return resp, data, nil
}

// stopOffline ends an entry in the state file of a probegate that is not
// running. It takes the directory's lock first, so it never writes under a
// running probegate, which would overwrite the change.
func (c *CLI) stopOffline(stdout io.Writer) error {
	unlock, err := store.LockDir(c.storagePath)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%w: %v; end it through the running probegate's admin API (--url) instead", errRefused, err)
	}
	if err != nil {
		return err
	}
	defer unlock()
	fs, err := store.OpenFile(c.storagePath)
	if err != nil {
		return err
	}
	st, err := fs.Load(context.Background())
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(slices.Clone(st.Entries), func(e entries.Entry) bool { return e.Backend == c.name })
	if len(kept) == len(st.Entries) {
		termsafe.Fprintf(stdout, "%s was not in maintenance\n", c.name)
		return nil
	}
	if _, err := fs.Swap(context.Background(), st, store.Write{Entries: kept}); err != nil {
		return err
	}
	termsafe.Fprintf(stdout, "%s left maintenance in %s; probegate readmits it after its probes, once started\n", c.name, c.storagePath)
	return nil
}
