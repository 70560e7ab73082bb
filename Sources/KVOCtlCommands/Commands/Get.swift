// `kvoctl get PATH`: one `get` request, the value printed as compact JSON.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Prints the value at a key path.
    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the value at a key path as JSON (indented on a terminal, one line when piped).",
            discussion: """
                A key that was never set prints null. A path through a number, string, bool or array is error 1005.
                With --meta, prints {"value":…,"seq":…,"modSeq":…}: the seq now and the seq that last stored the \
                key (null for a computed key or one never set), for a later `kvoctl set --if-mod-seq`.

                EXAMPLE:
                  kvoctl get person.address.city
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The key path, e.g. person.address.city.")
        var path: String

        @Flag(help: "Print the value with the current seq and the key's modSeq.")
        var meta = false

        @OptionGroup var output: ValueOptions

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let client = try self.connection.connect()
            let value: JSONValue
            do {
                if self.meta {
                    value = try client.call("get", .object(["path": .string(self.path), "meta": .bool(true)]))
                } else {
                    value = try client.call("get", .object(["path": .string(self.path)]))["value"] ?? .null
                }
            } catch {
                throw client.report(error)
            }
            try self.output.print(value)
        }
    }
}
