// `kvoctl get PATH`: one `get` request, the value printed as compact JSON.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Prints the value at a key path.
    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the value at a key path as compact JSON.",
            discussion: """
                A key that was never set prints null. A path through a number, string, bool or array is error 1005.

                EXAMPLE:
                  kvoctl get person.address.city
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The key path, e.g. person.address.city.")
        var path: String

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let client = try self.connection.connect()
            let value: JSONValue
            do {
                value = try client.get(self.path)
            } catch {
                throw self.connection.report(error)
            }
            try Output.line(JSONWriter.encodeString(value))
        }
    }
}
