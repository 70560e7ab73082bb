// Finding the package's own executables (kvod, kvoctl) from inside a test process: they are built next to the test
// bundle, in the same build directory, whatever --scratch-path or configuration was used.

public import Foundation

/// The directories searched for the package's executables, best first: `$KVOD_BIN_DIR` when set, the directory of
/// the running test binary (`/proc/self/exe` resolved), the directory holding an enclosing `.xctest` bundle (macOS),
/// and `../debug` next to each of those.
public func binaryDirectories() -> [URL] {
    var directories: [URL] = []
    if let override = ProcessInfo.processInfo.environment["KVOD_BIN_DIR"], !override.isEmpty {
        directories.append(URL(fileURLWithPath: override, isDirectory: true))
    }
    var executables: [URL] = []
    if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        executables.append(URL(fileURLWithPath: path))
    }
    if let url = Bundle.main.executableURL { executables.append(url.resolvingSymlinksInPath()) }
    if let first = CommandLine.arguments.first {
        executables.append(URL(fileURLWithPath: first).standardizedFileURL.resolvingSymlinksInPath())
    }
    for executable in executables {
        var directory = executable.deletingLastPathComponent()
        // Inside a macOS bundle (kvodPackageTests.xctest/Contents/MacOS/…): the build directory holds the bundle.
        var probe = directory
        while probe.path != "/" {
            if probe.pathExtension == "xctest" {
                directory = probe.deletingLastPathComponent()
                break
            }
            probe = probe.deletingLastPathComponent()
        }
        directories.append(directory)
        directories.append(directory.deletingLastPathComponent().appendingPathComponent("debug", isDirectory: true))
    }
    var seen: Set<String> = []
    return directories.filter { seen.insert($0.standardizedFileURL.path).inserted }
}

/// The package executable `name` (for example "kvod" or "kvoctl"): the first of `binaryDirectories()` that holds an
/// executable file of that name, else the path it would have in the first directory (so the caller's error names it).
public func binaryURL(named name: String) -> URL {
    let candidates = binaryDirectories().map { $0.appendingPathComponent(name) }
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        ?? candidates.first
        ?? URL(fileURLWithPath: name)
}

/// `binaryURL(named:)`, or a `TestSupportError.binaryNotFound` that lists every place searched.
public func existingBinaryURL(named name: String) throws -> URL {
    let url = binaryURL(named: name)
    guard FileManager.default.isExecutableFile(atPath: url.path) else {
        throw TestSupportError.binaryNotFound(name: name, searched: binaryDirectories().map(\.path))
    }
    return url
}
