package shellwords

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`lockctl run deploy -- ./deploy.sh`, []string{"lockctl", "run", "deploy", "--", "./deploy.sh"}},
		{`lockctl lock 'a b' "c \"d\" $X" e\ f`, []string{"lockctl", "lock", "a b", `c "d" $X`, "e f"}},
		{`lockctl ls 2>&1 >/dev/null > out.txt`, []string{"lockctl", "ls"}},
		{`lockctl ls >> log`, []string{"lockctl", "ls"}},
		{`echo ''`, []string{"echo", ""}},
	} {
		if got := Split(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		end  int
	}{
		{`run k -- make) | tee`, []string{"run", "k", "--", "make"}, 13},
		{`lock k -n; echo`, []string{"lock", "k", "-n"}, 9},
		{`fence check k "$F" # comment`, []string{"fence", "check", "k", "$F"}, 19},
		{`once k -- a#b`, []string{"once", "k", "--", "a#b"}, 13},
		{`lock 'x;y'`, []string{"lock", "x;y"}, 10},
	} {
		got, end := Command(tc.in)
		if !reflect.DeepEqual(got, tc.want) || end != tc.end {
			t.Errorf("Command(%q) = %q, %d; want %q, %d", tc.in, got, end, tc.want, tc.end)
		}
	}
}

func TestStripComment(t *testing.T) {
	for in, want := range map[string]string{
		`lockctl ls # list`:      `lockctl ls `,
		`# all comment`:          ``,
		`echo a#b`:               `echo a#b`,
		`echo '# not' "# not"`:   `echo '# not' "# not"`,
		`echo \# not # but this`: `echo \# not `,
	} {
		if got := StripComment(in); got != want {
			t.Errorf("StripComment(%q) = %q, want %q", in, got, want)
		}
	}
}
