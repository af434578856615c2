package runtime

// A setting the engine cannot use, named by its configuration key.

import "fmt"

// ConfigError is a setting the engine cannot use: Key names it (Flink's
// configuration key where Flink has one, else faultline's own), Value is
// what was given, as the user would type it, and Want what is accepted.
// Whoever took the value from the user names the setting as the user
// wrote it (the command line: its flag).
type ConfigError struct {
	Key   string
	Value string
	Want  string
	// Needs, when set, is the key of another setting without which this
	// one is not used (Want is then empty).
	Needs string
}

func (e *ConfigError) Error() string {
	if e.Needs != "" {
		return e.Key + " " + e.Value + " is used only with " + e.Needs
	}
	return e.Key + " " + e.Value + ": want " + e.Want
}

// Setting names the setting, the value given and what is accepted.
func (e *ConfigError) Setting() (key, value, want string) { return e.Key, e.Value, e.Want }

// Requires is the key of the setting this one needs ("": none).
func (e *ConfigError) Requires() string { return e.Needs }

// KeyOnBadRecord is the key of Config.OnBadRecord (faultline's: Flink
// leaves a record it cannot deserialize to the format).
const KeyOnBadRecord = "faultline.on-bad-record"

// Keys of the state backend's settings (Flink's).
const (
	KeyStateBackend = "state.backend.type"
	KeyIncremental  = "state.backend.incremental"
)

// Check checks the state backend's settings, which need no job to check;
// an error is a *ConfigError.
func (s StateConfig) Check() error {
	switch s.StateBackend {
	case "", "heap", "badger":
	default:
		return &ConfigError{Key: KeyStateBackend, Value: fmt.Sprintf("%q", s.StateBackend), Want: "heap or badger"}
	}
	if s.Incremental && s.StateBackend != "badger" {
		return &ConfigError{Key: KeyIncremental, Value: "true",
			Want: "the badger state backend (as in Flink, where only RocksDB has incremental checkpoints)"}
	}
	return nil
}
