// The one atomic-replace writer: a temporary file written and fsynced, renamed over the target, the directory fsynced,
// so a crash leaves either the old file or the new one. The data directory's snapshots (DataDirectory, and the
// background snapshot's child, SnapshotProcess) and the cluster's term history go through it.
#if canImport(Glibc)
import Glibc
#endif

/// Replacing a file atomically.
public enum AtomicFile {
    /// Where a replacement failed; the raw values are the background snapshot child's exit statuses.
    public enum Stage: Int32, Sendable {
        case open = 1
        case write = 2
        case sync = 3
        case rename = 4
        case syncDirectory = 6
    }

    /// A replacement that failed, and at which stage (the temporary file is left for the caller to remove).
    public struct Failure: Error, Sendable {
        public var stage: Stage
        public var error: PersistenceError
    }

    /// Replaces `path` with `parts` written one after another: to `temporary` (`path` + ".tmp" by default), fsynced,
    /// renamed over `path`, then `directory` fsynced.
    public static func replace(
        _ path: String, with parts: [[UInt8]], directory: String, temporary: String? = nil
    ) throws(Failure) {
        let temporary = temporary ?? path + ".tmp"
        do {
            let file: FileHandle
            do {
                file = try FileHandle(path: temporary, flags: O_WRONLY | O_CREAT | O_TRUNC)
            } catch {
                throw Failure(stage: .open, error: error)
            }
            for bytes in parts {
                do { try file.writeAll(bytes) } catch { throw Failure(stage: .write, error: error) }
            }
            do { try file.sync() } catch { throw Failure(stage: .sync, error: error) }
        }  // closed here
        guard rename(temporary, path) == 0 else {
            throw Failure(stage: .rename, error: PersistenceError.posix("rename", temporary))
        }
        do { try Files.syncDirectory(directory) } catch { throw Failure(stage: .syncDirectory, error: error) }
    }
}
