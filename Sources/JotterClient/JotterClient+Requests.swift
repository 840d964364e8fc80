import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Building, sending (with retries) and decoding requests: what every API call shares.
extension JotterClient {
    /// A request for `path` (percent-encoded already) under `baseURL`, with `query` escaped.
    func makeRequest(_ method: String, _ path: String, query: FormURLEncodedBody = [:], headers: [String: String] = [:]) -> URLRequest {
        var text = baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += path
        if !query.fields.isEmpty { text += "?" + query.encoded }
        return makeRequest(method, url: URL(string: text) ?? baseURL, headers: headers)
    }

    /// A request for `url` with the API's `Accept` header.
    func makeRequest(_ method: String, url: URL, headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        // Every POST carries a key, so that a retry creates nothing twice (RetryPolicy).
        if method == "POST" { request.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// `path` relative to the server (such as a list's `next`), resolved against `baseURL`.
    func resolve(_ path: String) -> URL? {
        URL(string: path, relativeTo: baseURL)?.absoluteURL
    }

    /// The page after `page` (following its `next` link), or nil after the last one.
    func page<Item>(after page: Page<Item>) async throws(JotterClientError) -> Page<Item>? {
        guard let next = page.next else { return nil }
        guard let url = resolve(next) else { throw .invalidResponse("bad next link '\(next)'") }
        return try await send(makeRequest("GET", url: url), decoding: Page<Item>.self).value
    }

    /// The items of `first` and of every page after it, in order.
    func everyPage<Item>(from first: Page<Item>) async throws(JotterClientError) -> [Item] {
        var all = first.items
        var page = first
        while let next = try await self.page(after: page) {
            all += next.items
            page = next
        }
        return all
    }

    /// `/notes/{id}`: a path segment with everything but unreserved characters escaped.
    static func segment(_ id: String) -> String {
        FormURLEncodedBody.percentEncode(id, spaceAsPlus: false)
    }

    /// Sends `request`, retrying as the policy allows; an error status throws with the
    /// server's problem details.
    func send(_ request: URLRequest) async throws(JotterClientError) -> (Data, HTTPURLResponse) {
        try await withRetries(request) { () async throws(JotterClientError) in try await exchange(request) }
    }

    /// As `send(_:)`, the answer's body read as it arrives and the size of each chunk told to
    /// `received`: the sync engine counts bytes arriving as progress, so a large page on a slow
    /// link is not taken for a server that does not answer.
    func send(_ request: URLRequest, received: @Sendable (Int) -> Void) async throws(JotterClientError) -> (Data, HTTPURLResponse) {
        try await withRetries(request) { () async throws(JotterClientError) in
            var head: HTTPURLResponse?
            var body = Data()
            try await stream(request, response: { head = $0 }) { chunk in
                body.append(chunk)
                received(chunk.count)
            }
            guard let head else { throw .invalidResponse("no response") }
            return (body, head)
        }
    }

    /// One attempt: the answer, or the error it stands for.
    func exchange(_ request: URLRequest) async throws(JotterClientError) -> (Data, HTTPURLResponse) {
        let (data, response): (Data, URLResponse)
        let request = try await adapted(request)
        do {
            #if canImport(FoundationNetworking)
            if SocketExchange.needsOwnTLS(request.url, trust: configuration.trust) {
                (data, response) = try await ownTLS(request)
                return (data, try Self.checked(response, body: data))
            }
            // Not `data(for:)`: cancelling it can deadlock on Linux (see `detachedData`).
            (data, response) = try await session.detachedData(for: request)
            #else
            (data, response) = try await session.data(for: request)
            #endif
        } catch {
            throw JotterClientError.wrapping(error, url: request.url)
        }
        return (data, try Self.checked(response, body: data))
    }

    #if canImport(FoundationNetworking)
    /// One exchange over a TLS connection of the SDK's own (`ServerTrust`), its body collected.
    private func ownTLS(_ request: URLRequest) async throws -> (Data, URLResponse) {
        var body = request.httpBody ?? Data()
        if body.isEmpty, let stream = request.httpBodyStream {
            stream.open()
            defer { stream.close() }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = stream.read(&chunk, maxLength: chunk.count)
                if count <= 0 { break }
                body.append(contentsOf: chunk[..<count])
            }
        }
        var head: HTTPURLResponse?
        var data = Data()
        for try await event in SocketExchange.run(
            request, headers: sessionHeaders, body: .data(body), idleTimeout: configuration.requestTimeout,
            trust: configuration.trust, counter: sockets)
        {
            switch event {
            case .response(let response): head = response
            case .data(let chunk): data.append(chunk)
            case .sent: break
            }
        }
        guard let head else { throw URLError(.badServerResponse) }
        return (data, head)
    }
    #endif

    /// Sends `request` and decodes its JSON answer.
    func send<T: Decodable>(_ request: URLRequest, decoding type: T.Type) async throws(JotterClientError)
        -> (value: T, response: HTTPURLResponse)
    {
        let (data, response) = try await send(request)
        return (try Self.decode(type, from: data), response)
    }

    /// Runs `attempt` until it succeeds, the policy gives up, or the task is cancelled.
    func withRetries<T>(_ request: URLRequest, _ attempt: () async throws(JotterClientError) -> T) async throws(JotterClientError) -> T {
        var count = 1
        var neverReached = true
        while true {
            do {
                return try await attempt()
            } catch {
                neverReached = neverReached && error.isConnectionNotMade
                guard
                    let delay = configuration.retry.delay(
                        after: error, attempt: count, method: request.httpMethod ?? "GET",
                        idempotencyKey: request.value(forHTTPHeaderField: "Idempotency-Key") != nil)
                else {
                    var error = error
                    error.neverReachedServer = neverReached
                    throw error
                }
                try await Self.pause(delay)
                count += 1
            }
        }
    }

    /// Waits `seconds`; cancellation ends the wait with `.cancelled`.
    static func pause(_ seconds: Double) async throws(JotterClientError) {
        do {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
        } catch {
            throw .cancelled
        }
    }

    /// The HTTP response, or the error its status stands for.
    static func checked(_ response: URLResponse, body: Data) throws(JotterClientError) -> HTTPURLResponse {
        guard let http = response as? HTTPURLResponse else { throw .invalidResponse("not an HTTP response") }
        guard http.statusCode < 400 else { throw .http(status: http.statusCode, body: body, response: http) }
        return http
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(JotterClientError) -> T {
        guard !data.isEmpty else { throw .invalidResponse("an empty body where JSON was expected") }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw .invalidResponse("the JSON is not what the API promises: \(describe(error))")
        } catch {
            throw .invalidResponse("the body is not JSON")
        }
    }

    /// A `DecodingError` in words: which field, and what was wrong with it.
    static func describe(_ error: DecodingError) -> String {
        func place(_ path: [any CodingKey]) -> String {
            path.isEmpty ? "the top level" : "'" + path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".") + "'"
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(place(context.codingPath + [key])) is missing"
        case .typeMismatch(let type, let context): return "\(place(context.codingPath)) is not a \(type)"
        case .valueNotFound(let type, let context): return "\(place(context.codingPath)) is null, not a \(type)"
        case .dataCorrupted(let context): return context.codingPath.isEmpty ? "the body is not JSON" : "\(place(context.codingPath)) is malformed"
        @unknown default: return "it can't be read"
        }
    }
}
