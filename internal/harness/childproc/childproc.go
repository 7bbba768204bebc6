// Package childproc runs helper binaries (etcd, kube-apiserver, the collector)
// as child processes that log to a file and never outlive their parent.
package childproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a running child whose stdout and stderr go to a log file.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // Wait's result, set before done is closed
}

// Start starts bin with args; env is appended to the parent's environment.
func Start(bin string, args, env []string, logPath string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", bin, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	release := onSpawnThread(func() { err = cmd.Start() })
	if err != nil {
		release()
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{Name: filepath.Base(bin), LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		release()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited says whether the process has exited, and with what.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, waits up to grace and then kills the process. It
// returns the exit error of a process that ended on SIGTERM with a failure,
// or an error when it had to be killed. A process still running after
// grace first gets SIGQUIT (a Go program writes every goroutine's stack
// to its log and exits), and the error carries that dump: where it hung.
func (p *Process) Stop(grace time.Duration) error {
	if exited, _ := p.Exited(); exited {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
		return p.exitError()
	case <-time.After(grace):
	}
	dump := ""
	if p.cmd.Process.Signal(syscall.SIGQUIT) == nil {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		dump = quitDump(p.LogPath, maxDump)
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %v after SIGTERM; killed it%s", p.Name, grace, dump)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL%s", p.Name, p.cmd.Process.Pid, dump)
	}
}

// maxDump bounds the goroutine dump an error of Stop carries.
const maxDump = 256 << 10

// quitDump is what a Go process wrote to its log on SIGQUIT (its
// goroutines), at most maxBytes of it, or "" when the log has none.
func quitDump(logPath string, maxBytes int) string {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	i := bytes.LastIndex(b, []byte("SIGQUIT: quit"))
	if i < 0 {
		return ""
	}
	b = b[i:]
	if len(b) > maxBytes {
		b = append(b[:maxBytes:maxBytes], "\n... (dump cut)"...)
	}
	return "; its goroutines on SIGQUIT:\n" + string(b)
}

// Kill ends the process at once, as a crash would.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *Process) exitError() error {
	if p.err == nil {
		return nil
	}
	// A signal-terminated exit after SIGTERM is a normal stop for servers
	// that do not catch it.
	if ee, ok := p.err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return fmt.Errorf("%s exited: %w", p.Name, p.err)
}

// Tail is the end of the process's log, for error messages.
func (p *Process) Tail(maxBytes int) string { return Tail(p.LogPath, maxBytes) }

// Tail is the end of a file, or "" when it cannot be read.
func Tail(path string, maxBytes int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	return string(b)
}
