// A member's position as published under `/kvod/NAME/members/ADDRESS` (docs/SCALING.md#design): the election
// compares positions, so that the member with every record any live member has wins.
import WireProtocol

/// A member's applied seq and the term of its last record (TermHistory), and the last `onDisconnect` registration
/// change it has (the term of the leader that numbered it, and its number): the election prefers the highest.
struct MemberPosition: Equatable, CustomStringConvertible {
    var seq: UInt64
    var term: UInt64
    var registration: (term: UInt64, number: UInt64)?

    init(seq: UInt64, term: UInt64, registration: (term: UInt64, number: UInt64)? = nil) {
        self.seq = seq
        self.term = term
        self.registration = registration
    }

    /// Whether `self` (of member `address`) beats `other` (of `otherAddress`): a later last term, else a higher
    /// seq, else a later registration change (a later leader's, else a higher number: under `--sync-replicas`
    /// an acknowledged registration is on a follower, and one that has it must win over one that does not),
    /// else (a tie) the smaller address. A member that publishes no registration (none yet, or an earlier
    /// version) counts as having the earliest.
    func isAhead(of other: MemberPosition, address: String, otherAddress: String) -> Bool {
        if self.term != other.term { return self.term > other.term }
        if self.seq != other.seq { return self.seq > other.seq }
        let mine = self.registration ?? (0, 0)
        let theirs = other.registration ?? (0, 0)
        if mine != theirs { return mine > theirs }
        return address < otherAddress
    }

    /// `{"seq":N,"term":T}`, with `"registration":[TERM,NUMBER]` when it has one, as published.
    var json: String {
        guard let registration else { return "{\"seq\":\(self.seq),\"term\":\(self.term)}" }
        return "{\"seq\":\(self.seq),\"term\":\(self.term),\"registration\":[\(registration.term),\(registration.number)]}"
    }

    var description: String { "seq \(self.seq), term \(self.term)" }

    init?(json text: String) {
        guard case .object(let object)? = try? JSONParser.parse(Array(text.utf8)),
            case .int(let seq)? = object["seq"], case .int(let term)? = object["term"], seq >= 0, term >= 0
        else { return nil }
        var registration: (term: UInt64, number: UInt64)?
        if case .array(let pair)? = object["registration"], pair.count == 2, case .int(let rterm) = pair[0],
            case .int(let number) = pair[1], rterm >= 0, number >= 0
        {
            registration = (UInt64(rterm), UInt64(number))
        }
        self.init(seq: UInt64(seq), term: UInt64(term), registration: registration)
    }

    static func == (lhs: MemberPosition, rhs: MemberPosition) -> Bool {
        lhs.seq == rhs.seq && lhs.term == rhs.term && lhs.registration.map { [$0.term, $0.number] }
            == rhs.registration.map { [$0.term, $0.number] }
    }
}
