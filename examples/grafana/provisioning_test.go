package grafana

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// decodeStrict decodes the YAML file path into v, failing on unknown fields.
func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestProvisioningFiles decodes the provisioning files the README tells to
// copy under /etc/grafana/provisioning, with the fields of Grafana's
// provisioning formats (apiVersion 1): a file provider of dashboards whose
// folder, when the README's docker line mounts examples/grafana there, holds
// File, and a Prometheus data source.
func TestProvisioningFiles(t *testing.T) {
	var dash struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name            string `yaml:"name"`
			Folder          string `yaml:"folder"`
			Type            string `yaml:"type"`
			DisableDeletion bool   `yaml:"disableDeletion"`
			AllowUIUpdates  bool   `yaml:"allowUiUpdates"`
			Options         struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	decodeStrict(t, filepath.Join("provisioning", "dashboards", "rlbench.yaml"), &dash)
	if dash.APIVersion != 1 || len(dash.Providers) != 1 {
		t.Fatalf("dashboards: apiVersion %d, %d providers; want 1 and 1", dash.APIVersion, len(dash.Providers))
	}
	p := dash.Providers[0]
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	mount := "examples/grafana:" + p.Options.Path + ":ro"
	if p.Type != "file" || !strings.Contains(string(readme), mount) {
		t.Errorf("dashboards: provider type %q, path %q: the README's docker line does not mount %q", p.Type, p.Options.Path, mount)
	}
	if _, err := os.Stat(File); err != nil {
		t.Errorf("the mounted folder lacks the dashboard: %v", err)
	}
	var dss struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name      string `yaml:"name"`
			Type      string `yaml:"type"`
			Access    string `yaml:"access"`
			URL       string `yaml:"url"`
			IsDefault bool   `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	decodeStrict(t, filepath.Join("provisioning", "datasources", "prometheus.yaml"), &dss)
	if dss.APIVersion != 1 || len(dss.Datasources) != 1 {
		t.Fatalf("datasources: apiVersion %d, %d data sources; want 1 and 1", dss.APIVersion, len(dss.Datasources))
	}
	if d := dss.Datasources[0]; d.Type != "prometheus" || !strings.Contains(string(readme), strings.TrimPrefix(d.URL, "http://")) {
		t.Errorf("datasources: %+v is not the README's Prometheus", d)
	}
}
