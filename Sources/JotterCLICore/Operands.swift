/// A command's positional arguments (its operands), declared once with what it takes: the
/// command reads them through this declaration, which says what is missing or too many.
///
/// ```swift
/// static let operands = Operands.single("ID")  // exactly one: `missing ID`, `unexpected argument 'b'`
/// static let operands = Operands.some("ID")    // one or more, in order: `missing ID`
///
/// let id = try arguments[Self.operands]
/// ```
package struct Operands<Value>: Sendable {
    let read: @Sendable (Arguments) throws(UsageError) -> Value
}

extension Operands<String> {
    /// Exactly one, named `what` in the usage error.
    package static func single(_ what: String) -> Operands<String> {
        Operands { arguments throws(UsageError) in try arguments.single(what) }
    }
}

extension Operands<[String]> {
    /// One or more, in order; none is the usage error `missing` (default `missing WHAT`).
    package static func some(_ what: String, missing: String? = nil) -> Operands<[String]> {
        Operands { arguments throws(UsageError) in
            let words = arguments.positionals()
            guard !words.isEmpty else { throw UsageError(missing ?? "missing \(what)") }
            return words
        }
    }
}

extension Arguments {
    /// The operands as `operands` declares them: `arguments[Self.operands]`.
    /// - Throws: `UsageError` when one is missing or there are too many.
    package subscript<Value>(operands: Operands<Value>) -> Value {
        get throws(UsageError) { try operands.read(self) }
    }
}
