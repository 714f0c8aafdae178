package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/observe"
)

// TestCheckJobsAndShards: --jobs 2, and two --shard runs joined with --join, find what the whole
// check finds, at the same line of the original log; a clean log joins clean.
func TestCheckJobsAndShards(t *testing.T) {
	r := observe.NewRouter(2)
	other := "b"
	for i := 0; r.PartOf(other) == r.PartOf("a"); i++ {
		other = "b" + strings.Repeat("x", i)
	}
	clean := logLine(1, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`) +
		logLine(2, 0, "enqueue", `{"mailbox":"`+other+`","id":"m2","max_attempts":2}`, `{}`) +
		logLine(3, 1, "lease", `{"mailbox":"`+other+`","lease_for":5000000000}`, `{"message":{"id":"m2","attempts":1,"token":"T2"}}`) +
		logLine(4, 2, "ack", `{"id":"m2","token":"T2"}`, `{}`) +
		logLine(5, 9, "purge", `{"limit":5,"older_than":1000000000,"horizon":1000000000}`, `{"affected":1}`)
	bad := clean + logLine(6, 10, "ack", `{"id":"m2","token":"T2"}`, `{}`)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, log string
		code      int
		want      string
	}{
		{"clean", clean, exitPass, "the model agrees with every event"},
		{"bad", bad, exitFinding, "(line 6, seq 6)"},
	} {
		path := filepath.Join(dir, tc.name+".jsonl")
		if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if code := run([]string{"check", "--findings", dir, path}, &out, &errOut); code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Fatalf("%s: check exited %d:\n%s%s", tc.name, code, out.String(), errOut.String())
		}
		out.Reset()
		if code := run([]string{"check", "--jobs", "2", "--findings", dir, path}, &out, &errOut); code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Fatalf("%s: check --jobs 2 exited %d:\n%s%s", tc.name, code, out.String(), errOut.String())
		}
		var joins []string
		for _, shard := range []string{"0/2", "1/2"} {
			out.Reset()
			j := filepath.Join(dir, tc.name+strings.ReplaceAll(shard, "/", "of")+".json")
			code := run([]string{"check", "--shard", shard, "--join-out", j, "--findings", dir, path}, &out, &errOut)
			if code != exitPass && code != exitFinding {
				t.Fatalf("%s: check --shard %s exited %d:\n%s%s", tc.name, shard, code, out.String(), errOut.String())
			}
			joins = append(joins, j)
		}
		out.Reset()
		if code := run(append([]string{"check", "--join"}, joins...), &out, &errOut); code != tc.code || !strings.Contains(out.String(), strings.TrimSuffix(tc.want, " every event")) {
			t.Fatalf("%s: check --join exited %d:\n%s%s", tc.name, code, out.String(), errOut.String())
		}
	}
	for _, args := range [][]string{
		{"check", "--jobs", "0", "x.jsonl"},
		{"check", "--jobs", "2", "--keep-going", "x.jsonl"},
		{"check", "--jobs", "2", "--p", "x.jsonl"},
		{"check", "--shard", "2/2", "x.jsonl"},
		{"check", "--shard", "1", "x.jsonl"},
		{"check", "--join-out", "j.json", "x.jsonl"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != exitUsage {
			t.Errorf("%q exited %d, want a usage error:\n%s", args, code, errOut.String())
		}
	}
}
