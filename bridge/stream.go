package bridge

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pconform/pconform/internal/pprofile"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// The streaming P oracle: the project's spec monitors and a driver that reads spec events at run
// time (PStreamDriver, with the foreign functions of pstream/StreamReader.cs), compiled
// once per version of their sources into a cache directory, then run by the checker with the
// events on its standard input. One schedule (-s 1, --seed 1): the driver makes no choice, so
// the run is deterministic.

//go:embed pstream/StreamReader.cs
var streamReaderCS []byte

// streamProject names the cached project and its DLL.
const streamProject = "PConformStream"

// streamFormat changes when the cached project's layout changes, so old caches are not reused.
const streamFormat = "pstream/2"

// monitorSources are the model files a project of the spec monitors compiles (the streaming
// oracle's, the observed drivers'), relative to the project directory: the types and events the
// monitors use, the rules they judge rows by (Rules.p, with the variant names it reads), and every
// spec file (PSpec/*.p, added by monitorFiles). The profile constants the rules read
// (PSrc/Profile_gen.p) are written for the project's profile, not read.
var monitorSources = []string{"PSrc/Types.p", "PSrc/Observations.p", "PSrc/ObservationEvents_gen.p",
	"PSrc/Rules.p", "PSrc/Variants_gen.p"}

// monitorProject is the .pproj of a project named name that compiles the spec monitors (PSrc and
// PSpec, as monitorFiles gives them) with the P files of its own directories dirs.
func monitorProject(name string, dirs ...string) []byte {
	var own strings.Builder
	for _, d := range dirs {
		own.WriteString("    <PFile>./" + d + "/</PFile>\n")
	}
	return []byte(`<Project>
  <ProjectName>` + name + `</ProjectName>
  <InputFiles>
    <PFile>./PSrc/</PFile>
    <PFile>./PSpec/</PFile>
` + own.String() + `  </InputFiles>
  <OutputDir>./PGenerated/</OutputDir>
</Project>
`)
}

// monitorFiles reads the spec monitors' sources from projectDir, with the profile constants
// written for prof: path (relative to the compiled project) to content. what names the project
// in errors.
func monitorFiles(projectDir string, prof profile.Profile, what string) (map[string][]byte, error) {
	constants, err := pprofile.Source(prof)
	if err != nil {
		return nil, fmt.Errorf("bridge: %s: %w", what, err)
	}
	files := map[string][]byte{"PSrc/Profile_gen.p": constants}
	specs, err := filepath.Glob(filepath.Join(projectDir, "PSpec", "*.p"))
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("bridge: no spec monitors (PSpec/*.p) in %s", projectDir)
	}
	rels := append([]string{}, monitorSources...)
	for _, s := range specs {
		rels = append(rels, "PSpec/"+filepath.Base(s))
	}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(projectDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("bridge: %s: %w", what, err)
		}
		files[rel] = data
	}
	return files, nil
}

// streamFiles reads the streaming project's sources: path (relative to the cached project) to
// content, the monitors' files (monitorFiles), the driver and its foreign code from this package.
func streamFiles(projectDir string, prof profile.Profile) (map[string][]byte, error) {
	files, err := monitorFiles(projectDir, prof, "streaming P oracle")
	if err != nil {
		return nil, err
	}
	files["PStream/Driver.p"] = []byte(PStreamDriver())
	files["PStream/StreamReader.cs"] = streamReaderCS
	files[streamProject+".pproj"] = monitorProject(streamProject, "PStream")
	return files, nil
}

// StreamKey is the cache key of the streaming P oracle of the spec monitors in projectDir: the
// hash of every source it compiles (the monitors, the types and events they use, the driver and
// its foreign code), under the default profile. A compiled project is kept under its key.
func StreamKey(projectDir string) (string, error) {
	files, err := streamFiles(projectDir, profile.Profile{})
	if err != nil {
		return "", err
	}
	return compileKey(streamFormat, files), nil
}

// StreamCacheDir is where the streaming P oracle's compiled projects are kept when
// Config.StreamCache is "": pconform/pstream under the user's cache directory (os.UserCacheDir).
func StreamCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("bridge: no cache directory for the streaming P oracle (set Config.StreamCache or --p-cache): %w", err)
	}
	return filepath.Join(dir, "pconform", "pstream"), nil
}

// CompileStream returns the DLL of the streaming P oracle for the spec monitors of
// cfg.ProjectDir, compiling it when the cache (cfg.StreamCache, or StreamCacheDir) has none for
// their sources' hash. compiled says whether it compiled. A compile goes into a temporary
// directory that is renamed into place, so concurrent callers never see half a project.
func CompileStream(ctx context.Context, cfg Config) (dll string, compiled bool, err error) {
	cfg = cfg.filled()
	files, err := streamFiles(cfg.ProjectDir, cfg.Profile)
	if err != nil {
		return "", false, err
	}
	cache := cfg.StreamCache
	if cache == "" {
		if cache, err = StreamCacheDir(); err != nil {
			return "", false, err
		}
	}
	_, dll, compiled, err = compileCached(ctx, cfg, compileJob{Cache: cache, Format: streamFormat, Project: streamProject,
		Files: files, What: "the streaming P oracle"})
	return dll, compiled, err
}

// Stream is one run of the streaming P oracle: spec events go in (Send), a verdict comes out
// (Close). It is not safe for concurrent use.
type Stream struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *bufio.Writer
	out    bytes.Buffer
	dir    string // the run's directory: the checker's output and the state file
	sent   int64
	line   []byte
	broken bool // the checker stopped reading: it found a bug, or it died
	closed bool
	start  time.Time
}

// StreamVerdict is what a stream's run found.
type StreamVerdict struct {
	// Message is the assertion message of the monitor that fired, as CheckObserved gives it;
	// "" when every monitor held.
	Message string
	// Tag is the tag of the last spec event the checker read: the one the monitor refused,
	// when Message is set.
	Tag string
	// Sent and Read count the spec events sent and those the checker read.
	Sent, Read int64
	// Direct says the checker handed the events to the monitors itself (StreamAnnounce in
	// pstream/StreamReader.cs), without P's announce and the run's logs of each event; false
	// when it could not bind that on this P version and announced them.
	Direct bool
	// CPU is the checker process's user and system time, PeakRSS its peak resident set in
	// bytes (0 where the system does not say).
	CPU     time.Duration
	PeakRSS int64
	_       struct{}
}

// StartStream starts the checker on the streaming P oracle of cfg.ProjectDir, compiling it
// first when the cache has none (see CompileStream). Close must be called.
func StartStream(ctx context.Context, cfg Config) (*Stream, error) {
	cfg = cfg.filled()
	dll, _, err := CompileStream(ctx, cfg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pconform-pstream-")
	if err != nil {
		return nil, err
	}
	s := &Stream{dir: dir, start: time.Now()}
	s.cmd = exec.CommandContext(ctx, cfg.P, "check", dll, "-tc", PStreamTestCase, "-s", "1", "--seed", "1",
		"-o", filepath.Join(dir, "out"))
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(), "PCONFORM_PSTREAM_STATE="+filepath.Join(dir, "state"))
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bridge: running p: %w", err)
	}
	s.w = bufio.NewWriterSize(s.stdin, 1<<16)
	return s, nil
}

// Send writes ev, tagged (no tab or newline in it), to the checker. Once the checker has
// stopped reading (a monitor fired) events are dropped; Broken says so.
func (s *Stream) Send(ev SpecEvent, tag string) {
	if s.broken {
		return
	}
	s.line = AppendSpecLine(s.line[:0], ev, tag)
	if _, err := s.w.Write(s.line); err != nil {
		s.broken = true
		return
	}
	s.sent++
}

// Broken reports whether the checker stopped reading its input: its verdict is in (Close).
func (s *Stream) Broken() bool { return s.broken }

// Close ends the input, waits for the checker and returns its verdict. Errors: the checker
// could not run, or ended in a way no verdict explains (an internal error, input it did not
// read to its end while every monitor held).
func (s *Stream) Close() (StreamVerdict, error) {
	if s.closed {
		return StreamVerdict{}, errors.New("bridge: stream closed twice")
	}
	s.closed = true
	defer os.RemoveAll(s.dir)
	if !s.broken {
		if err := s.w.Flush(); err != nil {
			s.broken = true
		}
	}
	s.stdin.Close()
	err := s.cmd.Wait()
	v := StreamVerdict{Sent: s.sent}
	if st := s.cmd.ProcessState; st != nil {
		v.CPU = st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			v.PeakRSS = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		return v, fmt.Errorf("bridge: streaming P oracle: %w", err)
	}
	out := s.out.Bytes()
	if code != 0 && code != 1 {
		return v, fmt.Errorf("bridge: p check of the streaming P oracle exited %d:\n%s", code, tail(out, 20))
	}
	verdicts, err := parseObservedRun(out)
	if err != nil {
		return v, fmt.Errorf("bridge: p check of the streaming P oracle: %w:\n%s", err, tail(out, 20))
	}
	cv, ok := verdicts[PStreamTestCase]
	if !ok || len(verdicts) != 1 {
		return v, fmt.Errorf("bridge: p check ran %d test cases, not the one %s:\n%s", len(verdicts), PStreamTestCase, tail(out, 20))
	}
	state, err := os.ReadFile(filepath.Join(s.dir, "state"))
	if err != nil {
		return v, fmt.Errorf("bridge: the streaming P oracle left no state: %w:\n%s", err, tail(out, 20))
	}
	for _, l := range strings.Split(string(state), "\n") {
		if n, ok := strings.CutPrefix(l, "read "); ok {
			if v.Read, err = strconv.ParseInt(n, 10, 64); err != nil {
				return v, fmt.Errorf("bridge: the streaming P oracle's state: %q: %w", l, err)
			}
		} else if t, ok := strings.CutPrefix(l, "last "); ok {
			v.Tag = t
		} else if d, ok := strings.CutPrefix(l, "direct "); ok {
			v.Direct = d == "1"
		}
	}
	if cv.bugs == 0 {
		if v.Read != v.Sent || s.broken {
			return v, fmt.Errorf("bridge: the streaming P oracle read %d of the %d spec events sent and found no bug:\n%s", v.Read, v.Sent, tail(out, 20))
		}
		return v, nil
	}
	logPath := cv.log
	if !filepath.IsAbs(logPath) {
		logPath = filepath.Join(s.dir, logPath)
	}
	if v.Message, err = assertionMessage(logPath); err != nil {
		return v, err
	}
	if strings.HasPrefix(v.Message, PStreamErrorPrefix) {
		return v, fmt.Errorf("bridge: the streaming P oracle refused its input: %s", v.Message)
	}
	return v, nil
}

// CheckObservedStream is CheckObserved on the streaming P oracle: t's spec events
// (SpecDeriver) are fed at run time to the monitors compiled once per version of their
// sources. It returns the firing monitor's message ("" when every monitor held) and the index of
// the step whose event it refused (-1 when none).
func CheckObservedStream(ctx context.Context, cfg Config, t *traces.Trace) (msg string, step int, err error) {
	cfg.Profile = t.Expect.Profile
	s, err := StartStream(ctx, cfg)
	if err != nil {
		return "", -1, err
	}
	d := NewSpecDeriver(t.Expect.Profile)
	var evs []SpecEvent
	for i, st := range t.Steps {
		evs = d.Step(st, evs[:0])
		tag := strconv.Itoa(i)
		for _, ev := range evs {
			s.Send(ev, tag)
		}
		if s.Broken() {
			break
		}
	}
	v, err := s.Close()
	if err != nil {
		return "", -1, fmt.Errorf("bridge: trace %q: %w", t.Name, err)
	}
	if v.Message == "" {
		return "", -1, nil
	}
	step, err = strconv.Atoi(v.Tag)
	if err != nil {
		return "", -1, fmt.Errorf("bridge: trace %q: the streaming P oracle's last tag %q: %w", t.Name, v.Tag, err)
	}
	return v.Message, step, nil
}
