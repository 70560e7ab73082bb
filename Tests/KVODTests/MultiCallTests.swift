// kvod as a multi-call binary (Sources/kvod/MultiCall.swift): called through a link named `kvoctl`, as in the container
// image, it is kvoctl — the same help, output and exit statuses as the kvoctl executable — and under its own name it
// stays kvod.
import Foundation
import TestSupport
import Testing

/// A folder holding `kvoctl`, a symbolic link to the built kvod, as the image has it; removed by the caller.
private func kvoctlLinkToKVOD() throws -> (folder: URL, link: URL) {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kvod-multicall-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let link = folder.appendingPathComponent("kvoctl")
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: try existingBinaryURL(named: "kvod"))
    return (folder, link)
}

@Suite(.serialized) struct MultiCallTests {
    @Test(arguments: [["--help"], ["get", "--help"], ["watch", "--help"], ["--version"], ["bogus"], ["get"]])
    func kvodCalledKvoctlIsKvoctl(arguments: [String]) throws {
        let (folder, link) = try kvoctlLinkToKVOD()
        defer { try? FileManager.default.removeItem(at: folder) }
        let linked = try runCommand(link, arguments, timeout: .seconds(20))
        let kvoctl = try runCommand(try existingBinaryURL(named: "kvoctl"), arguments, timeout: .seconds(20))
        #expect(linked.status == kvoctl.status, "\(linked)")
        #expect(linked.stdout == kvoctl.stdout)
        #expect(linked.stderr == kvoctl.stderr)
    }

    @Test func kvodCalledKvoctlTalksToKvod() throws {
        let (folder, link) = try kvoctlLinkToKVOD()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try KVODProcess.start()
        defer { _ = server.command.terminate() }
        let set = try runCommand(link, ["set"] + server.connectionArguments + ["greeting", "hello"])
        #expect(set.status == 0, "\(set)")
        let get = try runCommand(link, ["get"] + server.connectionArguments + ["greeting"])
        #expect(get.status == 0, "\(get)")
        #expect(get.stdout == "\"hello\"\n")
        let ping = try runCommand(link, ["ping"] + server.connectionArguments)
        #expect(ping.status == 0, "\(ping)")
    }

    @Test func underItsOwnNameKvodIsKvod() throws {
        let help = try runKVOD(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: kvod"))
    }
}
