//! The system calls a hook may not make, as a seccomp filter: Unix sockets (a path-named
//! socket is reachable whatever the file rules say: the session bus, an SSH agent, a tmux or
//! Docker socket would each run commands outside the box), the kernel's keyrings (the
//! session's keys are inherited), tracing or reading another process's memory (a solution
//! rewriting the test program that calls it), io_uring (its operations bypass this filter),
//! and every system call of another ABI (32-bit calls go around a filter written for 64-bit
//! numbers).

/// One BPF instruction, as the kernel reads it (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Instruction {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low half of the first argument (little-endian).
const ARG0: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
/// x32's calls share the architecture with x86_64 and set this bit in the number.
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;
#[cfg(not(target_arch = "x86_64"))]
const X32_BIT: u32 = u32::MAX;

const fn op(code: u16, jt: u8, jf: u8, k: u32) -> Instruction {
    Instruction { code, jt, jf, k }
}

/// The filter: other ABIs and x32 get ENOSYS, `socket(AF_UNIX, …)` EACCES (pairs of
/// connected sockets, which reach nothing, stay allowed), the keyring, tracing and io_uring
/// calls ENOSYS; everything else is allowed and left to Landlock and the namespaces.
pub fn filter() -> Vec<Instruction> {
    let nosys = RET_ERRNO | libc::ENOSYS as u32;
    let denied_calls = [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];
    let mut program = vec![
        op(LD_W_ABS, 0, 0, ARCH),
        op(JEQ_K, 1, 0, AUDIT_ARCH),
        op(RET_K, 0, 0, nosys),
        op(LD_W_ABS, 0, 0, NR),
        op(JGE_K, 0, 1, X32_BIT),
        op(RET_K, 0, 0, nosys),
    ];
    // Each denied call jumps to the ENOSYS return after the list and the socket check.
    let n = denied_calls.len();
    for (i, call) in denied_calls.iter().enumerate() {
        // Past the remaining checks (n - i - 1), the socket test (1) and ALLOW (1).
        let to_nosys = (n - i - 1 + 2) as u8;
        program.push(op(JEQ_K, to_nosys, 0, *call as u32));
    }
    program.extend([
        op(JEQ_K, 1, 0, libc::SYS_socket as u32),
        op(RET_K, 0, 0, RET_ALLOW),
        // → a denied call lands here.
        op(RET_K, 0, 0, nosys),
    ]);
    // The socket call's family: program continues at this index when `socket` matched,
    // so the jump above is retargeted to it.
    let socket_check = program.len() as u8;
    let socket_jump = program.len() - 3;
    program[socket_jump].jt = socket_check - socket_jump as u8 - 1;
    program.extend([
        op(LD_W_ABS, 0, 0, ARG0),
        op(JEQ_K, 0, 1, libc::AF_UNIX as u32),
        op(RET_K, 0, 0, RET_ERRNO | libc::EACCES as u32),
        op(RET_K, 0, 0, RET_ALLOW),
    ]);
    program
}

/// The filter as bytes, as bubblewrap's `--seccomp FD` reads it.
pub fn bytes(program: &[Instruction]) -> Vec<u8> {
    program
        .iter()
        .flat_map(|i| {
            let mut b = Vec::with_capacity(8);
            b.extend(i.code.to_ne_bytes());
            b.push(i.jt);
            b.push(i.jf);
            b.extend(i.k.to_ne_bytes());
            b
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program on one call as the kernel would (this filter uses only loads, equal
    /// and greater-or-equal jumps and returns).
    fn run(program: &[Instruction], arch: u32, nr: u32, arg0: u32) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = program[pc];
            match i.code {
                LD_W_ABS => {
                    acc = match i.k {
                        NR => nr,
                        ARCH => arch,
                        ARG0 => arg0,
                        other => panic!("load of {other}"),
                    }
                }
                JEQ_K | JGE_K => {
                    let taken = if i.code == JEQ_K {
                        acc == i.k
                    } else {
                        acc >= i.k
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                other => panic!("opcode {other:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn unix_sockets_keyrings_io_uring_and_other_abis_are_refused_and_the_rest_allowed() {
        let program = filter();
        let call = |nr: i64, arg0: i32| run(&program, AUDIT_ARCH, nr as u32, arg0 as u32);
        let eacces = RET_ERRNO | libc::EACCES as u32;
        let enosys = RET_ERRNO | libc::ENOSYS as u32;
        assert_eq!(call(libc::SYS_socket, libc::AF_UNIX), eacces);
        assert_eq!(call(libc::SYS_socket, libc::AF_INET), RET_ALLOW);
        assert_eq!(call(libc::SYS_socketpair, libc::AF_UNIX), RET_ALLOW);
        for denied in [
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            assert_eq!(call(denied, 0), enosys, "{denied}");
        }
        for allowed in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_clone,
            libc::SYS_kill,
        ] {
            assert_eq!(call(allowed, 0), RET_ALLOW, "{allowed}");
        }
        assert_eq!(run(&program, 0x4000_0003, 1, 0), enosys, "i386");
        #[cfg(target_arch = "x86_64")]
        assert_eq!(call(libc::SYS_read | 0x4000_0000, 0), enosys, "x32");
        assert_eq!(bytes(&program).len(), program.len() * 8);
    }
}
