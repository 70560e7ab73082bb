// kvoctl's exit statuses, in one place so the help text, the code and the tests agree. 64 is argument-parser's own
// status for usage errors (`ValidationError`), which is also BSD's EX_USAGE.

import ArgumentParser

/// The statuses kvoctl exits with.
enum KVOCtlExitCode {
    /// 0: everything worked.
    static let success = ExitCode.success
    /// 1: an unexpected local failure (reading stdin, for example).
    static let failure = ExitCode.failure
    /// 2: the server answered with a JSON-RPC error.
    static let serverError = ExitCode(2)
    /// 3: kvod could not be reached, or the connection was lost.
    static let connectionFailed = ExitCode(3)
    /// 3 (`kvoctl cluster`): no member is a leader that accepts mutations.
    static let noLeader = ExitCode(3)
    /// 4: kvod did not answer (or, for `watch --timeout`, notify) in time.
    static let timeout = ExitCode(4)
    /// 5: kvod sent something that is not kvod's protocol.
    static let protocolError = ExitCode(5)
    /// 64: the command line (or a `kvoctl -` command line) is invalid.
    static let usage = ExitCode.validationFailure

    /// The table shown in `kvoctl --help`.
    static let helpText = """
        EXIT STATUS:
          0   success
          1   unexpected local failure (e.g. reading stdin)
          2   the server answered with an error ("kvoctl: error CODE: MESSAGE DATA"),
              1012 "not the leader" included, once --failover-wait has passed
          3   cannot connect to kvod (to any address), or the connection was lost;
              kvoctl cluster: no member is a leader that accepts mutations
          4   timed out waiting for kvod
          5   kvod sent something that is not kvod's protocol
          64  usage error
        """
}
