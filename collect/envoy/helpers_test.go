package envoy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

// fixture reads an Envoy fixture, preferring the testdata copy and falling
// back to <repo>/../shared/fixtures/envoy (see testfix.ReadFixture).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return testfix.ReadFixture(t, "envoy", name)
}

// allFixtures lists every file in /work/shared/fixtures/envoy (and testdata).
var allFixtures = []string{
	"gh_aeraki_pr40_prometheus_empty_braces_2022.txt",
	"gh_envoy_admin_rst_server_info_example.json",
	"gh_envoy_admin_rst_stats_detailed_histogram_text.txt",
	"gh_envoy_admin_rst_stats_json_histograms_doc_example.json",
	"gh_envoy_issue27878_stats_text_readouts_excerpt_2023.txt",
	"gh_envoy_issue6974_stats_text_rls_cluster_excerpt_2019.txt",
	"gh_envoy_issue7351_envoy_access_log_default_2019.log",
	"gh_envoy_issue7351_rls_debug_text_2019.log",
	"gh_envoy_issue7351_stats_text_excerpt_2019.txt",
	"gh_envoy_pr21912_changelog_prometheus_rename_2022.txt",
	"gh_envoygateway_issue5693_429_headers_2025.txt",
	"gh_fsm_start_demo_osm_edge_pipy_local_rl_NOT_ENVOY.txt",
}

// TestFixtureCopies checks that testdata holds every shared fixture
// unchanged, and that no shared fixture is missing from allFixtures.
func TestFixtureCopies(t *testing.T) {
	d := testfix.SharedFixtureDir(t, "envoy")
	entries, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, f := range allFixtures {
		listed[f] = true
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if !listed[e.Name()] {
			t.Errorf("shared fixture %s is not covered by these tests", e.Name())
		}
		want, err := os.ReadFile(filepath.Join(d, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			t.Errorf("testdata copy of %s: %v", e.Name(), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s differs from the shared fixture", e.Name())
		}
	}
}

func ptrF(f float64) *float64 { return &f }

func eqF(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
