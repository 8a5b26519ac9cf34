// Package fetch makes the HTTP GETs that wsready's commands (the bench
// harness's stats) and the tests of several packages share: a JSON body
// decoded, or a status.
package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// JSON GETs url with c (nil: http.DefaultClient), within ctx, and decodes
// its JSON body into v. A status other than 200 is an error that names it.
func JSON(ctx context.Context, c *http.Client, url string, v any) error {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("failed to get %s: %w", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("failed to get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed to get %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("failed to decode %s: %w", url, err)
	}
	return nil
}

// Status GETs url with c (nil: http.DefaultClient), within ctx, with Host
// header host ("": the URL's), and returns the response's status.
func Status(ctx context.Context, c *http.Client, url, host string) (int, error) {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("failed to get %s: %w", url, err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("failed to get %s: %w", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
