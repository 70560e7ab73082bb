// The `where` language's text: what parses to what canonical text (and back), what is refused with which column
// and message, the limits, and the key paths and variables a predicate reads.

import ObjectGraph
import Testing

struct PredicateParsingTests {
    @Test(
        "canonical text: one spelling per operator and keyword, parentheses only where needed, round trip",
        arguments: [
            ("score > 5", "score > 5"),
            ("score=5", "score == 5"),
            ("score == 5", "score == 5"),
            ("score <> 5", "score != 5"),
            ("score != 5", "score != 5"),
            ("score =< 5", "score <= 5"),
            ("score => 5", "score >= 5"),
            ("score<5 && rating>=1.5", "score < 5 AND rating >= 1.5"),
            ("a == 1 || b == 2 && c == 3", "a == 1 OR b == 2 AND c == 3"),
            ("(a == 1 || b == 2) && c == 3", "(a == 1 OR b == 2) AND c == 3"),
            ("a == 1 and (b == 2 and c == 3)", "a == 1 AND b == 2 AND c == 3"),
            ("((a == 1))", "a == 1"),
            ("!a == 1", "NOT a == 1"),
            ("not (a == 1 or b == 2)", "NOT (a == 1 OR b == 2)"),
            ("NOT NOT a == 1", "NOT NOT a == 1"),
            ("truepredicate", "TRUEPREDICATE"),
            ("FALSEPREDICATE OR TRUEPREDICATE", "FALSEPREDICATE OR TRUEPREDICATE"),
            ("name beginswith[c] 'A'", "name BEGINSWITH[c] \"A\""),
            ("name ENDSWITH[d] \"e\"", "name ENDSWITH[d] \"e\""),
            ("name CONTAINS[dc] 'x'", "name CONTAINS[cd] \"x\""),
            ("name like 'a*b?'", "name LIKE \"a*b?\""),
            ("name MATCHES '[a-z]+\\d'", "name MATCHES \"[a-z]+\\\\d\""),
            ("name MATCHES '[a-z]+\\\\d'", "name MATCHES \"[a-z]+\\\\d\""),
            ("name ==[c] 'x'", "name ==[c] \"x\""),
            ("score BETWEEN {1, 5}", "score BETWEEN {1, 5}"),
            ("score between $range", "score BETWEEN $range"),
            ("score IN {1,2 , 3}", "score IN {1, 2, 3}"),
            ("name IN {}", "name IN {}"),
            ("'ab' IN name", "\"ab\" IN name"),
            ("$x in tags", "$x IN tags"),
            ("any tasks.hours > 3", "ANY tasks.hours > 3"),
            ("SOME tasks.hours > 3", "ANY tasks.hours > 3"),
            ("all tasks.done == yes", "ALL tasks.done == TRUE"),
            ("NONE tasks.done == NO", "NONE tasks.done == FALSE"),
            ("manager == NULL", "manager == nil"),
            ("manager == nil", "manager == nil"),
            ("SELF == 'x'", "SELF == \"x\""),
            ("self.name == 'x'", "name == \"x\""),
            ("SELF.@count > 1", "@count > 1"),
            ("tasks.@count > 1", "tasks.@count > 1"),
            ("tasks.@sum.hours >= 10", "tasks.@sum.hours >= 10"),
            ("numbers.@max < 3", "numbers.@max < 3"),
            ("numbers.@avg.self < 3", "numbers.@avg < 3"),
            ("#in == 1", "#in == 1"),
            ("#name == 1", "name == 1"),
            ("a.in == 1", "a.in == 1"),
            ("prénom == 'é'", "prénom == \"é\""),
            ("x == -5", "x == -5"),
            ("x == - 5", "x == -5"),
            ("x == -9223372036854775808", "x == -9223372036854775808"),
            ("x == 9223372036854775807", "x == 9223372036854775807"),
            ("x == 1.5e3", "x == 1500.0"),
            ("x == 1E-5", "x == 1e-05"),
            ("x == 2.0", "x == 2.0"),
            ("x == 1e300", "x == 1e+300"),
            ("x == 'it''s'", nil),
            ("x == 'it\\'s'", "x == \"it's\""),
            ("x == \"a\\\"b\\\\c\\n\\t\\r\\u0041\\u{1F600}\\u0001\"", "x == \"a\\\"b\\\\c\\n\\t\\rA😀\\u{1}\""),
            ("x == '\u{301}a'", "x == \"\u{301}a\""),
            ("x == '\\\\\u{301}'", "x == \"\\\\\u{301}\""),
            ("x IN {1, 'a', nil, TRUE, {2}}", "x IN {1, \"a\", nil, TRUE, {2}}"),
            ("x == $y AND $y != nil", "x == $y AND $y != nil"),
        ] as [(String, String?)])
    func canonicalText(input: String, canonical: String?) throws {
        guard let canonical else {
            #expect(throws: PredicateSyntaxError.self) { try Predicate(parsing: input) }
            return
        }
        let predicate = try Predicate(parsing: input)
        #expect(predicate.description == canonical)
        #expect(try Predicate(parsing: canonical) == predicate)
        #expect(try Predicate(parsing: predicate.description).description == canonical)
    }

    @Test func treesFollowPrecedence() throws {
        let a = Predicate.comparison(.init(.keyPath(["a"]), .equal, .literal(1)))
        let b = Predicate.comparison(.init(.keyPath(["b"]), .equal, .literal(2)))
        let c = Predicate.comparison(.init(.keyPath(["c"]), .equal, .literal(3)))
        #expect(try Predicate(parsing: "a == 1 OR b == 2 AND c == 3") == .or([a, .and([b, c])]))
        #expect(try Predicate(parsing: "NOT a == 1 AND b == 2") == .and([.not(a), b]))
        #expect(try Predicate(parsing: "a == 1 OR (b == 2 OR c == 3)") == .or([a, b, c]))
        #expect(
            try Predicate(parsing: "ANY tasks.hours BETWEEN {1, $x}")
                == .comparison(
                    .init(quantifier: .any, .keyPath(["tasks", "hours"]), .between, .aggregate([.literal(1), .variable("x")]))))
        #expect(try Predicate(parsing: "scores.@sum > 1") == .comparison(.init(.keyPath(["scores", "@sum", "self"]), .greater, .literal(1))))
        #expect(try Predicate(parsing: "name LIKE[cd] 'x'") == .comparison(.init(.keyPath(["name"]), .like, options: [.caseInsensitive, .diacriticInsensitive], .literal("x"))))
    }

    @Test func builtPredicatesPrintAndReparse() throws {
        let a = Predicate.comparison(.init(.keyPath(["a"]), .equal, .literal(1)))
        let b = Predicate.comparison(.init(.keyPath(["b"]), .less, .literal(2.5)))
        // A chain nested in a chain of the same operator keeps its parentheses (the parser flattens it).
        #expect(Predicate.and([a, .and([b, a])]).description == "a == 1 AND (b < 2.5 AND a == 1)")
        #expect(try Predicate(parsing: "a == 1 AND (b < 2.5 AND a == 1)") == .and([a, b, a]))
        #expect(Predicate.and([]).description == "TRUEPREDICATE")
        #expect(Predicate.or([]).description == "FALSEPREDICATE")
        #expect(Predicate.not(.and([a, b])).description == "NOT (a == 1 AND b < 2.5)")
        #expect(Predicate.and([.or([a, b]), a]).description == "(a == 1 OR b < 2.5) AND a == 1")
        #expect(Predicate.comparison(.init(.keyPath(["and", "or"]), .equal, .literal(.null))).description == "#and.or == nil")
    }

    @Test(
        "refused text: the column (1-based, in Characters) and the message",
        arguments: [
            ("", 1, "empty predicate"),
            ("   ", 1, "empty predicate"),
            ("name", 5, "expected a comparison operator after 'name'"),
            ("name 'x'", 6, "expected a comparison operator after 'name', found ''x''"),
            ("name ==", 8, "unexpected end of predicate"),
            ("name == 'x' extra", 13, "unexpected 'extra'"),
            ("(name == 'x'", 13, "expected ')' to close the '(' at column 1"),
            ("(name == 'x' 5", 14, "expected ')' or an operator, found '5'"),
            ("name == 'x')", 12, "unexpected ')'"),
            ("name = = 'x'", 8, "expected a value or a key path, found '='"),
            ("a == 1 AND", 11, "unexpected end of predicate"),
            ("a == 1 & b == 2", 8, "unexpected '&'; did you mean '&&'?"),
            ("a == 1 | b == 2", 8, "unexpected '|'; did you mean '||'?"),
            ("a == 'x", 6, "unterminated string"),
            ("a == \"x\\", 6, "unterminated string"),
            ("a == 'é", 6, "unterminated string"),
            ("é == 'x' ^", 10, "unexpected character '^'"),
            ("a == '\\u12'", 7, "expected 4 hex digits after '\\u'"),
            ("a == '\\u{110000}'", 7, "'\\u{110000}' is not a Unicode scalar"),
            ("a == 1.", 8, "expected digits after '.'"),
            ("a == 1e", 8, "expected exponent digits"),
            ("a == 12abc", 8, "unexpected 'a' after a number"),
            ("a == 9223372036854775808", 6, "integer '9223372036854775808' is out of range (write it with a '.0' for a double)"),
            ("a == -9223372036854775809", 6, "integer '-9223372036854775809' is out of range (write it with a '.0' for a double)"),
            ("a == 1e999", 6, "number '1e999' is out of range"),
            ("a == -b", 7, "expected a number after '-' (arithmetic is not supported)"),
            ("a == $", 7, "expected a variable name after '$'"),
            ("a. == 1", 3, "expected a key after '.'"),
            ("a.@foo == 1", 3, "unknown collection operator '@foo'"),
            ("a.@count.b == 1", 10, "'@count' ends a key path"),
            ("a.@sum.@count == 1", 8, "expected a key after '@sum'"),
            ("a.@ == 1", 4, "expected a key after '@'"),
            ("ANY.x == 1", 1, "'ANY' is a reserved word; write #ANY for a key of that name"),
            ("in == 1", 1, "expected a value or a key path, found IN"),
            ("a ==[x] 1", 6, "unknown option 'x' (options are c and d)"),
            ("a ==[cc] 1", 6, "option 'c' given twice"),
            ("a ==[] 1", 6, "expected options c, d or cd after '['"),
            ("a ==[c 1", 8, "expected ']' after the options"),
            ("a BETWEEN {1}", 11, "BETWEEN needs two bounds: {lower, upper}"),
            ("a BETWEEN 5", 11, "BETWEEN needs two bounds: {lower, upper}"),
            ("a LIKE 5", 8, "LIKE needs a string pattern"),
            ("a MATCHES nil", 11, "MATCHES needs a string pattern"),
            ("a IN 5", 6, "IN needs an array, a string, a variable or a key path"),
            ("a IN {1 2}", 9, "expected ',' or '}' in an array"),
            ("a MATCHES 'ab('", 14, "invalid regular expression: missing ')'"),
            ("a MATCHES 'a**'", 14, "invalid regular expression: a quantifier cannot follow another; group the repeated part in (…)"),
            ("a MATCHES '(a)\\1'", 15, "invalid regular expression: backreferences and octal escapes are not supported"),
            ("a MATCHES '\\\\b'", 11, "invalid regular expression: the escape '\\b' is not supported"),
            ("é MATCHES 'x[z-a]'", 14, "invalid regular expression: range 'z-a' is out of order"),
            ("a == 1 OR", 10, "unexpected end of predicate"),
            ("NOT", 4, "unexpected end of predicate"),
            ("{1} == 1 AND ANY", 17, "unexpected end of predicate"),
        ] as [(String, Int, String)])
    func refused(input: String, column: Int, message: String) {
        #expect(throws: PredicateSyntaxError(column: column, message: message)) { try Predicate(parsing: input) }
    }

    @Test func limits() throws {
        let longest = "name == \"" + String(repeating: "x", count: Predicate.maxLength - 10) + "\""
        #expect(longest.count == Predicate.maxLength)
        _ = try Predicate(parsing: longest)
        let tooLong = String(repeating: " ", count: Predicate.maxLength) + "a == 1"
        #expect(throws: PredicateSyntaxError(column: 4097, message: "predicate is longer than 4096 characters")) {
            try Predicate(parsing: tooLong)
        }
        // 32 levels of parentheses are fine, 33 are not (with the column of the 33rd).
        let deep = String(repeating: "(", count: 32) + "a == 1" + String(repeating: ")", count: 32)
        _ = try Predicate(parsing: deep)
        #expect(throws: PredicateSyntaxError(column: 33, message: "predicate nested too deeply (limit 32 levels)")) {
            try Predicate(parsing: "(" + deep + ")")
        }
        #expect(throws: PredicateSyntaxError(column: 65, message: "predicate nested too deeply (limit 32 levels)")) {
            try Predicate(parsing: String(repeating: "! ", count: 33) + "a == 1")
        }
        #expect(throws: PredicateSyntaxError.self) {
            try Predicate(parsing: "a IN " + String(repeating: "{", count: 40) + String(repeating: "}", count: 40))
        }
        // Thousands of parentheses stop at the limit without deep recursion.
        #expect(throws: PredicateSyntaxError.self) { try Predicate(parsing: String(repeating: "(", count: 4000)) }
        // 85 comparisons are 3 × 85 = 255 nodes, 256 with the AND: fine; the 86th stops at its key path, the 257th node.
        let comparisons = (0..<85).map { "a == \($0)" }
        _ = try Predicate(parsing: comparisons.joined(separator: " AND "))
        let tooMany = (comparisons + ["b == 1"]).joined(separator: " AND ")
        #expect(throws: PredicateSyntaxError(column: 1011, message: "predicate has more than 256 nodes")) {
            try Predicate(parsing: tooMany)
        }
        #expect(throws: PredicateSyntaxError.self) {
            try Predicate(parsing: "a IN {" + (0..<300).map(String.init).joined(separator: ",") + "}")
        }
        // A regular expression whose program would pass the limit is refused, however small its text.
        #expect(throws: PredicateSyntaxError(column: 12, message: "invalid regular expression: regular expression too large (limit 4096 states)")) {
            try Predicate(parsing: "a MATCHES '((a{1000}){1000}){1000}'")
        }
        #expect(throws: PredicateSyntaxError(column: 17, message: "invalid regular expression: repetition count above 1000")) {
            try Predicate(parsing: "a MATCHES 'xyz(a{1001})'")
        }
        _ = try Predicate(parsing: "a MATCHES '\\\\w{1,1000}'")
        #expect(throws: PredicateSyntaxError.self) {
            try Predicate(parsing: "a MATCHES '" + String(repeating: "(", count: 33) + String(repeating: ")", count: 33) + "'")
        }
    }

    @Test func keyPathsAndVariables() throws {
        let predicate = try Predicate(
            parsing: """
                score > $min AND (manager.name BEGINSWITH 'A' OR tasks.@count > 2) AND ANY tasks.hours IN $hours \
                AND SELF != nil AND score < tasks.@sum.hours AND numbers.@max BETWEEN {$low, 10} AND 'x' IN tags
                """)
        #expect(
            predicate.keyPaths == [
                ["score"], ["manager", "name"], ["tasks", "@count"], ["tasks", "hours"], [], ["tasks", "@sum", "hours"],
                ["numbers", "@max", "self"], ["tags"],
            ])
        #expect(predicate.variables == ["min", "hours", "low"])
        #expect(try Predicate(parsing: "TRUEPREDICATE").keyPaths == [])
        #expect(try Predicate(parsing: "TRUEPREDICATE").variables == [])
    }

    @Test func errorDescriptionCarriesTheColumn() {
        #expect(PredicateSyntaxError(column: 3, message: "unexpected 'x'").description == "column 3: unexpected 'x'")
    }
}
