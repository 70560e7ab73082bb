// A fresh directory for one test's files (config files, token files), removed when the test lets go of it.

import Foundation

/// A temporary directory, deleted with everything in it when released.
public final class ScratchDirectory: @unchecked Sendable {
    // @unchecked: immutable after init.
    /// The directory's absolute path.
    public let path: String

    /// Creates `$TMPDIR/kvod-<label>-<pid>-<random>`.
    public init(_ label: String = "test") throws {
        self.path = NSTemporaryDirectory() + "kvod-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.path)
    }

    /// Writes `contents` to `name` in the directory and returns the file's path.
    @discardableResult
    public func write(_ name: String, _ contents: String) throws -> String {
        let file = (self.path as NSString).appendingPathComponent(name)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }
}
