import JotterAPI

/// Every note of a listing, fetching the next page only when the iteration reaches it.
///
/// Get one from `client.notes.all()`. Each iteration starts again from the first page.
///
/// ```swift
/// for try await note in client.notes.all(query: "milk", pageSize: 200) {
///     print(note.id, note.body)
/// }
/// let firstTen = try await client.notes.all().prefix(10).reduce(into: []) { $0.append($1) }
/// ```
public struct NoteSequence: AsyncSequence, Sendable {
    public typealias Element = Note
    public typealias Failure = JotterClientError

    let notes: JotterClient.Notes
    let query: String?
    let pageSize: Int?
    let order: JotterClient.Notes.Order

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(sequence: self)
    }

    /// Hands out one page's notes, then fetches the next page.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = Note
        public typealias Failure = JotterClientError

        let sequence: NoteSequence
        private var page: NoteList?
        private var index = 0

        init(sequence: NoteSequence) {
            self.sequence = sequence
        }

        /// The next note; fetches the next page when this one is used up.
        public mutating func next() async throws(JotterClientError) -> Note? {
            while true {
                if let page, index < page.notes.count {
                    index += 1
                    return page.notes[index - 1]
                }
                if let current = page {
                    // The current page is used up: follow `next`, or stop.
                    guard let following = try await sequence.notes.nextPage(after: current) else { return nil }
                    page = following
                } else {
                    page = try await sequence.notes.list(query: sequence.query, limit: sequence.pageSize, order: sequence.order)
                }
                index = 0
            }
        }
    }
}
