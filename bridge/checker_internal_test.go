package bridge

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseTestList(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
		wantErr   string
	}{
		{
			name: "real output",
			out: `.. Searching for a P project file *.pproj locally in the current folder
.. Found P project file: /x/Tiny.pproj
.. Checking ./PGenerated/PChecker/net8.0/Tiny.dll
.. List of test cases (total 2)
tcBridgeGreen
tcLeaselessRawAttemptsCounterexample
. Done
~~ [PTool]: Thanks for using P! ~~
`,
			want: []string{"tcBridgeGreen", "tcLeaselessRawAttemptsCounterexample"},
		},
		{name: "count mismatch", out: ".. List of test cases (total 3)\ntcA\ntcB\n. Done\n", wantErr: "says 3 test cases, found 2"},
		{name: "no list", out: "Error: could not find a compiled P file\n", wantErr: "no complete test list"},
		{name: "unterminated", out: ".. List of test cases (total 1)\ntcA\n", wantErr: "no complete test list"},
		{name: "bad count", out: ".. List of test cases (total many)\n. Done\n", wantErr: "cannot read test count"},
	} {
		got, err := parseTestList([]byte(tc.out))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrChecker) {
				t.Errorf("%s: got %v, want ErrChecker containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestSameObservations(t *testing.T) {
	a := []Event{{Type: "SendEvent"}, {Type: TypeAnnounce, Name: "eObsCrash", Machine: "S(1)", Payload: []byte(`{"at":0}`)}}
	b := []Event{{Type: TypeAnnounce, Name: "eObsCrash", Machine: "S(1)", Payload: []byte(`{"at":0}`)}, {Type: "AssertionFailure"}}
	c := []Event{{Type: TypeAnnounce, Name: "eObsCrash", Machine: "S(1)", Payload: []byte(`{"at":1}`)}}
	if !sameObservations(a, b) {
		t.Error("a and b announce the same observations")
	}
	if sameObservations(a, c) {
		t.Error("a and c differ in a payload")
	}
}
