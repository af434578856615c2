// Package runs holds end-to-end tests of headless runs: failures in every
// task counted exact from the committed output, the restart strategies
// giving up, the guarantees side by side, state TTL, bad input refused in
// one line; and, tagged kafka, the Kafka lane's runs against a real Apache
// Kafka broker (make test-kafka). It has no code; its tests build the
// program once (e2e.Main) and drive it as a user would.
package runs
