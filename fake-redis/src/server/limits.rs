//! `maxclients` fitted to the process's open-file limit, as Redis fits it when it starts.
//!
//! Every client is a descriptor. Redis needs `maxclients` of them plus 32 for itself (its
//! listeners, log, persistence files: `CONFIG_MIN_RESERVED_FDS`), so at start
//! (`adjustOpenFilesLimit`) it raises the soft `RLIMIT_NOFILE` toward that, and where the hard
//! limit stops it, lowers `maxclients` to what there is and logs what it did. A connection past
//! `maxclients` is then still accepted (a reserved descriptor takes it) and refused with
//! `-ERR max number of clients reached`, instead of waiting unanswered in the listen queue while
//! `accept` fails for want of descriptors.
//!
//! The fake raises the soft limit up to the hard one (not only to what `maxclients` needs), so
//! that `CONFIG SET maxclients` can later go as high as the hard limit allows without touching
//! the limit again; beyond that, it is refused with Redis's error (see
//! [`ClientLimit`](crate::engine::client_limit::ClientLimit)).

/// Descriptors kept for the server's own use beside its clients (Redis's
/// `CONFIG_MIN_RESERVED_FDS`).
pub const RESERVED_FDS: usize = 32;

/// What [`fit_open_files`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenFiles {
    /// `maxclients` as it now stands: as asked, or lowered to fit.
    pub maxclients: usize,
    /// The most `maxclients` can be with the descriptors there are: `CONFIG SET` refuses more.
    /// `None` where the limit cannot be read (not a Unix).
    pub ceiling: Option<usize>,
    /// The soft open-file limit before, and after raising it.
    pub soft_limit: Option<(u64, u64)>,
}

/// Raises the soft open-file limit toward the hard one and lowers `maxclients` to what it allows
/// (see the module docs). Logs as Redis does when it lowers `maxclients` or cannot
/// raise the limit as far as `maxclients` needs.
pub fn fit_open_files(maxclients: usize) -> OpenFiles {
    let needed = u64::try_from(maxclients.saturating_add(RESERVED_FDS)).unwrap_or(u64::MAX);
    let Some((before, after)) = raise_soft_limit(needed) else {
        return OpenFiles {
            maxclients,
            ceiling: None,
            soft_limit: None,
        };
    };
    let room = usize::try_from(after).unwrap_or(usize::MAX);
    // Redis refuses to start below 32 descriptors; the fake serves one client there instead.
    let ceiling = room.saturating_sub(RESERVED_FDS).max(1);
    if after < needed {
        tracing::warn!(
            "You requested maxclients of {maxclients} requiring at least {needed} max file \
             descriptors."
        );
        if ceiling < maxclients {
            tracing::warn!(
                "Current maximum open files is {after}. maxclients has been reduced to {ceiling} \
                 to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
            );
        }
    } else if after > before {
        tracing::info!(
            "Increased maximum number of open files to {after} (it was originally set to {before})."
        );
    }
    OpenFiles {
        maxclients: maxclients.min(ceiling),
        ceiling: Some(ceiling),
        soft_limit: Some((before, after)),
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (or, where that is unlimited, to `needed`
/// if it is lower than that); the soft limit before and after.
#[cfg(unix)]
fn raise_soft_limit(needed: u64) -> Option<(u64, u64)> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    // `None` is RLIM_INFINITY.
    let before = limit.current.unwrap_or(u64::MAX);
    let target = match limit.maximum {
        Some(hard) => hard,
        // Linux refuses an unlimited soft limit on descriptors: ask for what is needed.
        None => needed.max(before),
    };
    if target <= before {
        return Some((before, before));
    }
    let raised = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(target),
            maximum: limit.maximum,
        },
    );
    match raised {
        Ok(()) => Some((before, target)),
        Err(e) => {
            tracing::warn!(
                "Server can't set maximum open files to {target} because of OS error: {e}."
            );
            Some((before, before))
        }
    }
}

#[cfg(not(unix))]
fn raise_soft_limit(_needed: u64) -> Option<(u64, u64)> {
    None
}
