//! Entering the sandbox on Linux, in the launcher (a fresh single-threaded process, which a
//! user namespace needs): a user, mount and (without the network) network namespace; the
//! mounts that pin, protect and hide paths; loopback up; then Landlock, which also forbids any
//! later mount or unmount, so the command cannot undo the mounts.

use std::path::Path;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::statvfs::{statvfs, FsFlags};
use nix::unistd::{getgid, getuid};

use super::{Confinement, Support};

/// The newest Landlock ABI whose rights are asked for; older kernels enforce what they know.
const ABI_WANTED: ABI = ABI::V7;
/// Devices every program may write to (and `ioctl`, for terminals).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// What this system supports: tries the namespaces and asks Landlock its version. Run in the
/// launcher, which exits right after.
pub(super) fn probe() -> Support {
    let landlock = match landlock_version() {
        0 => Err("the kernel has no Landlock, or it is not enabled at boot".to_owned()),
        version => Ok(version),
    };
    let namespaces = enter_namespaces(true)
        .and_then(|()| loopback_up())
        .map_err(|why| format!("{why}"));
    Support {
        landlock,
        namespaces,
    }
}

/// The kernel's Landlock ABI version, 0 when it has none.
fn landlock_version() -> u32 {
    // Creating a ruleset is the crate's way to ask; the version is the best ABI it accepts.
    let mut version = 0;
    for (number, abi) in [
        (1, ABI::V1),
        (2, ABI::V2),
        (3, ABI::V3),
        (4, ABI::V4),
        (5, ABI::V5),
        (6, ABI::V6),
        (7, ABI::V7),
    ] {
        let ruleset = Ruleset::default()
            .set_compatibility(landlock::CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|ruleset| ruleset.create());
        match ruleset {
            Ok(_) => version = number,
            Err(_) => break,
        }
    }
    version
}

/// Confines this process as `confinement` says. `Err` says what failed; the caller then runs
/// nothing.
pub(super) fn enter(confinement: &Confinement) -> Result<(), String> {
    if confinement.namespaces {
        enter_namespaces(!confinement.network).map_err(|why| format!("namespaces: {why}"))?;
        for dir in &confinement.pinned {
            bind(dir, dir, MsFlags::empty()).map_err(|why| format!("{}: {why}", dir.display()))?;
        }
        for path in &confinement.read_only {
            bind(path, path, MsFlags::MS_RDONLY)
                .map_err(|why| format!("{}: {why}", path.display()))?;
        }
        for path in &confinement.hidden {
            hide(path).map_err(|why| format!("{}: {why}", path.display()))?;
        }
        if !confinement.network {
            // Without loopback a test server inside the sandbox could not even listen; a
            // failure here costs only that.
            let _ = loopback_up();
        }
    }
    restrict(confinement)
}

/// A user namespace mapping this user to itself, a mount namespace whose mounts no longer
/// propagate back, and a network namespace when `no_network`.
fn enter_namespaces(no_network: bool) -> Result<(), nix::Error> {
    let (uid, gid) = (getuid(), getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS;
    if no_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags)?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text)
            .map_err(|error| nix::Error::from_raw(error.raw_os_error().unwrap_or(nix::libc::EPERM)))
    };
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
}

/// Binds `source` over `target`, then remounts it with `extra` (read-only) and the flags the
/// mount under it has, which a user namespace may not drop.
/// statvfs's "relatime" flag, 4096 in Linux's `<sys/statvfs.h>`: nix names it only for glibc,
/// and musl's statvfs passes the kernel's flags on as they are.
const ST_RELATIME: FsFlags = FsFlags::from_bits_retain(4096);

fn bind(source: &Path, target: &Path, extra: MsFlags) -> Result<(), nix::Error> {
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )?;
    if extra.is_empty() {
        return Ok(());
    }
    let kept = statvfs(target)?.flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | extra;
    for (statvfs_flag, mount_flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(statvfs_flag) {
            flags |= mount_flag;
        }
    }
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>)
}

/// Mounts an empty read-only folder over a folder, `/dev/null` over a file.
fn hide(path: &Path) -> Result<(), nix::Error> {
    if path.is_dir() {
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,mode=0555"),
        )
    } else {
        mount(
            Some("/dev/null"),
            path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
    }
}

/// Brings up `lo` (always interface 1) in the new network namespace, with one netlink
/// `RTM_NEWLINK` request.
fn loopback_up() -> Result<(), nix::Error> {
    use nix::sys::socket::{
        recv, sendto, socket, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol,
        SockType,
    };
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST_ACK: u16 = 1 | 4;
    const IFF_UP: u32 = 1;
    const LOOPBACK_INDEX: i32 = 1;
    let socket = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )?;
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32u32.to_ne_bytes()); // nlmsghdr: length
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes()); // type
    message.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes()); // flags
    message.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    message.extend_from_slice(&0u32.to_ne_bytes()); // port
    message.extend_from_slice(&[0, 0]); // ifinfomsg: family (unspecified), padding
    message.extend_from_slice(&0u16.to_ne_bytes()); // device type
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes()); // interface index
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // flags
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // which flags change
    use std::os::fd::AsRawFd;
    sendto(
        socket.as_raw_fd(),
        &message,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )?;
    let mut answer = [0u8; 256];
    recv(socket.as_raw_fd(), &mut answer, MsgFlags::empty())?;
    Ok(())
}

/// Landlock: everything readable and executable, writes only in the writable paths and to the
/// terminal devices; without namespaces, TCP refused unless the network is allowed.
fn restrict(confinement: &Confinement) -> Result<(), String> {
    let abi = ABI_WANTED;
    let error = |error: landlock::RulesetError| format!("Landlock: {error}");
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(error)?;
    if !confinement.network && !confinement.namespaces {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(error)?;
    }
    let status = ruleset
        .create()
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(
                &confinement.writable,
                AccessFs::from_all(abi),
            ))
        })
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(
                DEVICES,
                AccessFs::from_read(abi) | AccessFs::from_write(abi),
            ))
        })
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(error)?;
    // Best effort: on a kernel without Landlock the namespaces alone confine (the probe said
    // so), but a ruleset the kernel accepted and did not enforce is a failure.
    if status.ruleset == RulesetStatus::NotEnforced && !confinement.namespaces {
        return Err("the kernel did not enforce the Landlock rules".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value written out for musl is glibc's, which nix names.
    #[cfg(target_env = "gnu")]
    #[test]
    fn relatime_is_the_flag_glibc_names() {
        assert_eq!(ST_RELATIME, FsFlags::ST_RELATIME);
    }
}
