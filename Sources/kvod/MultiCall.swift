// kvod as a multi-call binary: run through a link named `kvoctl` (as in the container image, where
// /usr/local/bin/kvoctl -> kvod), it is kvoctl, with kvoctl's arguments, help and exit statuses. One binary carries the
// Swift runtime once instead of twice (docker/README.md). Under any other name it is kvod.
import ArgumentParser
import KVOCtlCommands

extension Daemon {
    /// The process's entry point (`@main`): kvoctl when invoked by that name, otherwise kvod.
    static func main() {
        if Self.isInvokedAsKVOCtl(CommandLine.arguments.first ?? "") {
            KVOCtlEntry.main()
        }
        Self.main(nil)
    }

    /// Whether `argumentZero` names kvoctl: its last path component is exactly `kvoctl`.
    static func isInvokedAsKVOCtl(_ argumentZero: String) -> Bool {
        argumentZero.split(separator: "/").last == "kvoctl"
    }
}
