package answer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CalibrationFile is the name of the calibration file in a data directory,
// written by `exocortex eval --answers --calibrate` and read by up, ask and
// eval when present.
const CalibrationFile = "calibration.json"

// CalibrationEnv names a calibration file to use instead of
// <data>/calibration.json.
const CalibrationEnv = "EXOCORTEX_CALIBRATION"

// Calibrations is the content of a calibration file: one calibration for
// the language model's answer confidence and one for the extractive
// model's span score (either may be absent).
type Calibrations struct {
	// LLM calibrates AnswerDone.Confidence of mode llm (Config.Calibration).
	LLM *Calibration `json:"llm,omitempty"`
	// QA calibrates the extractive span score (Config.QACalibration).
	QA *Calibration `json:"qa,omitempty"`
	// Set names the golden set it was fitted on, and Fitted when.
	Set    string    `json:"set,omitempty"`
	Fitted time.Time `json:"fitted,omitempty"`
}

// CalibrationPath is the calibration file of a data directory:
// $EXOCORTEX_CALIBRATION when set, else <dataDir>/calibration.json.
func CalibrationPath(dataDir string) string {
	if p := os.Getenv(CalibrationEnv); p != "" {
		return p
	}
	return filepath.Join(dataDir, CalibrationFile)
}

// LoadCalibrations reads a calibration file; a missing file is (nil, nil).
func LoadCalibrations(path string) (*Calibrations, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read calibration: %w", err)
	}
	var c Calibrations
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("calibration file %s: %w", path, err)
	}
	for name, cal := range map[string]*Calibration{"llm": c.LLM, "qa": c.QA} {
		if err := cal.validate(); err != nil {
			return nil, fmt.Errorf("calibration file %s: %s: %w", path, name, err)
		}
	}
	return &c, nil
}

// Save writes the calibrations to path (atomically: a temporary file
// renamed over it).
func (c *Calibrations) Save(path string) error {
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	return nil
}

// Apply sets the calibrations on an answer config.
func (c *Calibrations) Apply(cfg *Config) {
	if c == nil {
		return
	}
	cfg.Calibration, cfg.QACalibration = c.LLM, c.QA
}

func (c *Calibration) validate() error {
	if c == nil {
		return nil
	}
	switch c.Method {
	case "platt":
	case "isotonic":
		if len(c.X) == 0 || len(c.X) != len(c.Y) {
			return fmt.Errorf("isotonic calibration needs as many x as y points (got %d and %d)", len(c.X), len(c.Y))
		}
		for i := 1; i < len(c.X); i++ {
			if c.X[i] < c.X[i-1] || c.Y[i] < c.Y[i-1] {
				return fmt.Errorf("isotonic calibration points must rise: point %d", i)
			}
		}
	default:
		return fmt.Errorf("method %q: want platt or isotonic", c.Method)
	}
	if c.Threshold < 0 || c.Threshold > 1 {
		return fmt.Errorf("threshold %v is not a probability", c.Threshold)
	}
	return nil
}
