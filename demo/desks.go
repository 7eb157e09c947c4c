package demo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/deskbot/deskbot/docs"
)

// The demo's desks are the example desks file's (docs/desks.example.toml),
// so the demo shows what makes deskbot safe as a team writes it: four eyes
// above ₹5,00,000, hard limits, risk rules. Two things are changed, and
// only in the copy the demo runs:
//
//   - each desk's models are left out, so every desk uses the demo's one
//     model (the scripted desk, or the model server at MODEL_BASE_URL);
//   - square_off_at is left out: it refuses orders that open a position
//     after its time on trading days, and the demo must work at any hour.

// DesksFile writes the demo's desks file into dir and returns its path and
// the names of its desks, in the file's order.
func DesksFile(dir string) (path string, desks []string, err error) {
	var file map[string]any
	if err := toml.Unmarshal(docs.DesksExample, &file); err != nil {
		return "", nil, fmt.Errorf("demo: the example desks file: %w", err)
	}
	list, _ := file["desk"].([]map[string]any)
	if len(list) == 0 {
		return "", nil, fmt.Errorf("demo: the example desks file has no [[desk]]")
	}
	for _, d := range list {
		delete(d, "model")
		if risk, ok := d["risk"].(map[string]any); ok {
			delete(risk, "square_off_at")
		}
		name, _ := d["name"].(string)
		desks = append(desks, name)
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(file); err != nil {
		return "", nil, fmt.Errorf("demo: the desks file: %w", err)
	}
	path = filepath.Join(dir, "desks.toml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return "", nil, fmt.Errorf("demo: %w", err)
	}
	return path, desks, nil
}
