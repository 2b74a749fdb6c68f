package exporter

import (
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// serveMetrics answers a scrape: every series that could be collected, in
// the text format, gzip-compressed when the client accepts it (Prometheus
// asks for it). A series that could not be collected drops itself, never
// the others: a scrape that fails whole silences every alert. Its error
// goes to the log, never to the client. As promhttp did, name[] in the
// query keeps only the families named.
func (e *Exporter) serveMetrics(w http.ResponseWriter, r *http.Request) {
	x := e.collect()
	for _, err := range x.errs {
		e.cfg.Logf("metrics: %v", err)
	}
	var only map[string]bool
	if names := r.URL.Query()["name[]"]; len(names) > 0 {
		only = make(map[string]bool, len(names))
		for _, n := range names {
			only[n] = true
		}
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Add("Vary", "Accept-Encoding")
	var out io.Writer = w
	var gz *gzip.Writer
	if acceptsGzip(r.Header) {
		h.Set("Content-Encoding", "gzip")
		gz = gzip.NewWriter(w)
		out = gz
	}
	err := x.writeTo(out, only)
	if gz != nil {
		if cerr := gz.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		// The client went away, or timed out: the headers are sent, so
		// there is nobody else to tell.
		e.cfg.Logf("metrics: writing the response: %v", err)
	}
}

// acceptsGzip reads Accept-Encoding: gzip is chosen when the client gives
// it (by name or by *) a quality above 0 and above identity's; identity is
// what a client gets that names neither (promhttp's choice too).
func acceptsGzip(h http.Header) bool {
	gzipQ, identityQ := -1.0, -1.0
	for _, line := range h.Values("Accept-Encoding") {
		for _, part := range strings.Split(line, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			q := 1.0
			if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					continue // a malformed entry says nothing
				}
				q = f
			}
			if coding == "gzip" || coding == "*" {
				gzipQ = max(gzipQ, q)
			}
			if coding == "identity" || coding == "*" {
				identityQ = max(identityQ, q)
			}
		}
	}
	return gzipQ > 0 && gzipQ > identityQ
}
