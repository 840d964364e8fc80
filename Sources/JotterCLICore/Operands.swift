/// A command's positional arguments (its operands), declared once with what it takes: the
/// command reads them through this declaration, which says what is missing or too many, and
/// its usage line and completions show them as it names them.
///
/// ```swift
/// @Operand(.single("ID")) var id: String  // exactly one: `missing ID`, `unexpected argument 'b'`
/// @Operand(.some("ID")) var ids: [String]  // one or more, in order: `missing ID`
/// @Operand(.optional("SRC")) var source: String?  // none or one: nil or the one
/// ```
package struct Operands<Value>: Sendable {
    /// How the usage line shows them: `ID`, `ID…`, `[ID…]`, `ID [TEXT…]`; empty for none.
    package let usage: String
    /// The name of the first (`ID`, `FILE`, `bash|zsh|fish`), what completion offers for it;
    /// `nil` for none.
    package let first: String?
    let read: @Sendable (Arguments) throws(UsageError) -> Value
}

extension Operands {
    /// These operands with their value made into another by `transform`, which may refuse it
    /// with a usage error (a token's id is a number).
    package func map<Other>(_ transform: @escaping @Sendable (Value) throws(UsageError) -> Other) -> Operands<Other> {
        let read = self.read
        return Operands<Other>(usage: usage, first: first) { arguments throws(UsageError) in try transform(try read(arguments)) }
    }
}

extension Operands<String> {
    /// Exactly one, named `what` (and in the usage error `missing`, default `missing WHAT`).
    package static func single(_ what: String, missing: String? = nil) -> Operands<String> {
        Operands(usage: what, first: what) { arguments throws(UsageError) in
            let words = arguments.positionals()
            guard let first = words.first else { throw UsageError(missing ?? "missing \(what)") }
            guard words.count == 1 else { throw UsageError("unexpected argument '\(words[1])'") }
            return first
        }
    }
}

extension Operands<String?> {
    /// At most one, named `what`: nil when there is none. The usage line shows `[WHAT]`, or
    /// `WHAT` when `required`: when the form without it is one of the command's `otherUsages`.
    package static func optional(_ what: String, shownRequired required: Bool = false) -> Operands<String?> {
        Operands(usage: required ? what : "[\(what)]", first: what) { arguments throws(UsageError) in
            let words = arguments.positionals()
            guard words.count <= 1 else { throw UsageError("unexpected argument '\(words[1])'") }
            return words.first
        }
    }
}

extension Operands<[String]> {
    /// One or more, in order; none is the usage error `missing` (default `missing WHAT`).
    package static func some(_ what: String, missing: String? = nil) -> Operands<[String]> {
        Operands(usage: what + "…", first: what) { arguments throws(UsageError) in
            let words = arguments.positionals()
            guard !words.isEmpty else { throw UsageError(missing ?? "missing \(what)") }
            return words
        }
    }

    /// Any number, none included, in order.
    package static func any(_ what: String) -> Operands<[String]> {
        Operands(usage: "[\(what)…]", first: what) { arguments throws(UsageError) in arguments.positionals() }
    }
}

extension Operands<(String, [String])> {
    /// One, then any number more (`ID [TEXT…]`).
    package static func single(_ what: String, then more: String) -> Operands<(String, [String])> {
        Operands(usage: "\(what) [\(more)…]", first: what) { arguments throws(UsageError) in
            let words = arguments.positionals()
            guard let first = words.first else { throw UsageError("missing \(what)") }
            return (first, Array(words.dropFirst()))
        }
    }
}

extension Operands<(String, String)> {
    /// Exactly two, in order (`ID NOTE`).
    package static func pair(_ what: String, _ then: String) -> Operands<(String, String)> {
        Operands(usage: "\(what) \(then)", first: what) { arguments throws(UsageError) in
            let words = arguments.positionals()
            guard words.count >= 2 else { throw UsageError("missing \(words.isEmpty ? what : then)") }
            guard words.count == 2 else { throw UsageError("unexpected argument '\(words[2])'") }
            return (words[0], words[1])
        }
    }
}

extension Arguments {
    /// The operands as `operands` declares them (what an `@Operand` is filled with).
    /// - Throws: `UsageError` when one is missing or there are too many.
    package subscript<Value>(operands: Operands<Value>) -> Value {
        get throws(UsageError) { try operands.read(self) }
    }
}
