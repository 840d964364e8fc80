/// Texts cut into tokens for the merge: lines, or the words inside lines.
///
/// A token list covers a span of one input's UTF-8 bytes with no gap: token `i` is the bytes
/// `bounds[i] ..< bounds[i + 1]`. Tokens are compared by `ids`: equal bytes, equal id, within one
/// `TokenInterner` (ids are given in order of first appearance, so they are the same in every run).
struct MergeTokens {
    /// The whole input's bytes (shared, not copied, by every token list cut from it).
    let bytes: [UInt8]
    /// `count + 1` byte offsets into `bytes`.
    var bounds: [Int]
    /// One id per token.
    var ids: [Int32]

    var count: Int { ids.count }

    /// Byte offset where token `index` starts (`index == count`: where the last one ends).
    func offset(_ index: Int) -> Int { bounds[index] }

    /// Whether tokens `range` here and `other` there are the same sequence.
    func same(_ range: Range<Int>, as other: Range<Int>, in tokens: MergeTokens) -> Bool {
        guard range.count == other.count else { return false }
        var j = other.lowerBound
        for i in range {
            if ids[i] != tokens.ids[j] { return false }
            j += 1
        }
        return true
    }
}

/// Gives equal byte strings equal ids, in order of first appearance.
///
/// The dictionary is only looked up, never iterated, so its per-process hash seed does not reach
/// the ids (nor anything else the merge computes).
struct TokenInterner {
    private var ids: [ArraySlice<UInt8>: Int32] = [:]

    /// How many distinct tokens have been seen: ids are `0 ..< distinct`.
    var distinct: Int { ids.count }

    mutating func id(of token: ArraySlice<UInt8>) -> Int32 {
        if let id = ids[token] { return id }
        let id = Int32(ids.count)
        ids[token] = id
        return id
    }
}

enum Tokenizer {
    /// Lines: each ends with its `\n` (the last may have none). An empty span has no token.
    static func lines(_ bytes: [UInt8], interner: inout TokenInterner) -> MergeTokens {
        var bounds = [0]
        var ids: [Int32] = []
        var start = 0
        bytes.withUnsafeBufferPointer { buffer in
            var i = 0
            let n = buffer.count
            while i < n {
                if buffer[i] == 0x0A {
                    bounds.append(i + 1)
                    ids.append(interner.id(of: bytes[start..<i + 1]))
                    start = i + 1
                }
                i += 1
            }
        }
        if start < bytes.count {
            bounds.append(bytes.count)
            ids.append(interner.id(of: bytes[start...]))
        }
        return MergeTokens(bytes: bytes, bounds: bounds, ids: ids)
    }

    /// Words of `bytes[span]`: a run of word characters (ASCII letters, digits, `_`, and every
    /// non-ASCII character, so a multi-byte character is never cut), a run of spaces and tabs
    /// (and `\r`), or any other single ASCII character (punctuation, `\n`, controls).
    ///
    /// Decided on bytes alone, with no Unicode tables: the same cut in every Swift version.
    static func words(_ bytes: [UInt8], span: Range<Int>, interner: inout TokenInterner) -> MergeTokens {
        var bounds = [span.lowerBound]
        var ids: [Int32] = []
        var i = span.lowerBound
        while i < span.upperBound {
            let kind = Self.kind(bytes[i])
            var j = i + 1
            if kind != .single {
                while j < span.upperBound, Self.kind(bytes[j]) == kind { j += 1 }
            }
            bounds.append(j)
            ids.append(interner.id(of: bytes[i..<j]))
            i = j
        }
        return MergeTokens(bytes: bytes, bounds: bounds, ids: ids)
    }

    enum Kind { case word, blank, single }

    @inline(__always) static func kind(_ byte: UInt8) -> Kind {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F, 0x80...0xFF: .word
        case 0x20, 0x09, 0x0D: .blank
        default: .single
        }
    }
}
