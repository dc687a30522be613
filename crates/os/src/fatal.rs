//! What a fatal signal does to the terminal: while the workbench holds it (raw mode, the
//! alternate screen, the mouse, a hidden cursor), SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT
//! first puts it back as the shell had it, then ends moot as that signal would. The handler
//! makes only async-signal-safe calls on what was prepared before: a write of the restoring
//! sequences and a `tcsetattr` of the terminal's saved settings, to the terminal itself.

use std::sync::OnceLock;

/// The signals that end a process where it stands.
const FATAL: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// What undoes the workbench's modes: bracketed paste and every mouse mode off, the main
/// screen back, the cursor shown.
const RESTORE: &[u8] =
    b"\x1b[?2004l\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?1049l\x1b[?25h";

/// The terminal as the shell left it, and where to reach it, saved before raw mode.
struct Saved {
    tty: libc::c_int,
    settings: libc::termios,
    /// Each fatal signal's action before this one, put back before the signal is raised
    /// again.
    previous: [libc::sigaction; 5],
}

static SAVED: OnceLock<Saved> = OnceLock::new();

/// Saves the terminal's settings and installs the handler; call before the terminal goes
/// raw. Does nothing when there is no terminal, and the first call's settings are kept.
pub fn restore_terminal_on_fatal_signals() {
    if SAVED.get().is_some() {
        return;
    }
    // SAFETY: open, tcgetattr and sigaction on a path, a descriptor and structs this function
    // owns; a zeroed sigaction and termios are valid values of those plain C structs.
    unsafe {
        let tty = libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if tty < 0 {
            return;
        }
        let mut settings: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(tty, &mut settings) != 0 {
            libc::close(tty);
            return;
        }
        let mut previous: [libc::sigaction; 5] = std::mem::zeroed();
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        // On the alternate stack (Rust gives each thread one), so a stack overflow can run it.
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        // Saved before any handler can run, as the handler reads them.
        for (i, signal) in FATAL.iter().enumerate() {
            libc::sigaction(*signal, std::ptr::null(), &mut previous[i]);
        }
        if SAVED
            .set(Saved {
                tty,
                settings,
                previous,
            })
            .is_err()
        {
            libc::close(tty);
            return;
        }
        for signal in FATAL {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The handler: the terminal put back; the signal's previous handler run (Rust's own, for a
/// stack overflow, says so and aborts); then the default action, and the signal raised again,
/// which ends the process when this returns (a signal sent from outside, which a fault's
/// re-run instruction would not raise again, included).
extern "C" fn handler(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let Some(saved) = SAVED.get() else {
        return;
    };
    // SAFETY: write, tcsetattr, sigaction and raise are async-signal-safe, on memory saved
    // before the handler was installed and never changed after; the previous handler is
    // called as the kernel would have called it.
    unsafe {
        let _ = libc::write(saved.tty, RESTORE.as_ptr().cast(), RESTORE.len());
        libc::tcsetattr(saved.tty, libc::TCSANOW, &saved.settings);
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &default, std::ptr::null_mut());
        if let Some(i) = FATAL.iter().position(|s| *s == signal) {
            let previous = &saved.previous[i];
            let action = previous.sa_sigaction;
            if action != libc::SIG_DFL && action != libc::SIG_IGN {
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    let run: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(action);
                    run(signal, info, context);
                } else {
                    let run: extern "C" fn(libc::c_int) = std::mem::transmute(action);
                    run(signal);
                }
                // It may have installed an action of its own: the default it is.
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        libc::raise(signal);
    }
}

/// Stops this process as the shell's Ctrl-Z would (SIGTSTP, whose default action stops it);
/// returns once the shell continues it (`fg`). The workbench gives the terminal back before
/// and takes it again after.
pub fn suspend() {
    // SAFETY: raise with a valid signal number; SIGTSTP keeps its default action here.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
}
