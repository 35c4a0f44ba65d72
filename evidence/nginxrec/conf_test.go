package nginxrec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/testfix"
)

func TestWorkerProcesses(t *testing.T) {
	for _, tc := range []struct {
		conf string
		n    int
		ok   bool
	}{
		{"worker_processes 4;\nevents {}\n", 4, true},
		{"daemon off;\nevents { worker_connections 512; }\nhttp { server { listen 80; } }\n", 1, true}, // nginx's default
		{"worker_processes  auto ;", 0, false},
		{"# worker_processes 8;\nworker_processes 2; # not 3\n", 2, true},
		{"worker_processes '3';", 3, true},
		{"http { worker_processes 9; }\nworker_processes 2;", 2, true}, // only the main context counts
		{"include /etc/nginx/modules/*.conf;\nevents {}", 0, false},    // may be set there
		{"include main.conf;\nworker_processes 2;", 2, true},
		{"worker_processes 0;", 0, false},
		{"worker_processes -1;", 0, false},
		{"worker_processes 2 3;", 0, false},
		{"worker_processes 2", 1, true}, // no ';': not a directive nginx would run; the default stands
		{"http {", 0, false},
		{"}", 0, false},
		{`log_format x '{"a":"b;}"}'; worker_processes 5;`, 5, true}, // quotes hide ; and }
		{`worker_processes "2`, 0, false},
	} {
		n, ok := nginxrec.WorkerProcesses([]byte(tc.conf))
		if n != tc.n || ok != tc.ok {
			t.Errorf("%q: got %d %v, want %d %v", tc.conf, n, ok, tc.n, tc.ok)
		}
	}
}

// TestWorkerProcessesOfCaptures: the real captures' configurations say 1.
func TestWorkerProcessesOfCaptures(t *testing.T) {
	confs, err := filepath.Glob(filepath.Join(testfix.SharedFixtureDir(t, "nginx"), "*", "nginx.conf"))
	if err != nil || len(confs) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := nginxrec.WorkerProcesses(b); n != 1 || !ok {
			t.Errorf("%s: %d %v", c, n, ok)
		}
	}
}

func FuzzWorkerProcesses(f *testing.F) {
	f.Add("worker_processes 4;\nevents {}\n")
	f.Add("# c\ninclude x;\nhttp { a 'b;' \"c\\\"}\"; }")
	f.Fuzz(func(t *testing.T, conf string) {
		n, ok := nginxrec.WorkerProcesses([]byte(conf))
		if ok != (n > 0) {
			t.Fatalf("%q: n %d ok %v", conf, n, ok)
		}
	})
}
