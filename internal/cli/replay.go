package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/internal/replay"
	"github.com/faultline-dev/faultline/tui"
)

// newReplayCmd is `faultline replay FILE`: a recorded session played in
// the terminal UI with no job running.
func newReplayCmd() *cobra.Command {
	var speed float64
	var session int
	var noMouse bool
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Play a recorded session (the state dir's events.jsonl) in the terminal UI, with no job running",
		Long: `Plays a session the terminal UI recorded (events.jsonl in the state dir, or
an --events-file, headless too) back in the terminal UI, with no job and no
Kafka: for a class without a working machine, and to examine a demo that went
wrong. The events come at their recorded pace (--speed 4: four times as
fast); space pauses and goes on, . shows the next event, z slows down, q
quits. The panes show what the events say: the job graph, the subtasks'
statuses and load, the checkpoints, the restarts and the live verification's
line. A file holds every session recorded into it; the newest plays unless
--session names another (1 is the oldest).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if speed <= 0 {
				return usagef("--speed %v: want a positive factor, e.g. 1 or 4", speed)
			}
			s, err := readSession(args[0], session)
			if err != nil {
				return err
			}
			if !isTerminal(cmd.OutOrStdout()) {
				return usagef("replay draws the terminal UI: run it on a terminal")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			p := replay.NewPlayer(s, speed)
			go p.Run(ctx)
			return tui.Run(ctx, p, p.Events(), uiOptions(noMouse))
		},
	}
	cmd.Flags().Float64Var(&speed, "speed", 1, "how many times as fast as recorded")
	cmd.Flags().BoolVar(&noMouse, "no-mouse", false, noMouseHelp)
	cmd.Flags().IntVar(&session, "session", 0, "which recorded session to play, 1 the oldest (default: the newest)")
	return cmd
}

// readSession reads the session numbered n (0: the newest) of the record
// in path.
func readSession(path string, n int) (replay.Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return replay.Session{}, exitError{code: 1, err: err}
	}
	defer f.Close()
	sessions, err := replay.Read(f)
	if err != nil {
		return replay.Session{}, exitError{code: 1, err: fmt.Errorf("%s is not a recorded session: %w", path, err)}
	}
	switch {
	case len(sessions) == 0:
		return replay.Session{}, exitError{code: 1, err: fmt.Errorf("%s holds no recorded session", path)}
	case n == 0:
		return sessions[len(sessions)-1], nil
	case n < 0 || n > len(sessions):
		if len(sessions) == 1 {
			return replay.Session{}, usagef("--session %d: %s holds one session", n, path)
		}
		return replay.Session{}, usagef("--session %d: %s holds %d sessions (1 to %d)", n, path, len(sessions), len(sessions))
	}
	return sessions[n-1], nil
}
