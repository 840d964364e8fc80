import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient {
    /// What `echo` sends as the request body.
    public enum EchoBody: Sendable {
        /// `application/x-www-form-urlencoded`.
        case form(FormURLEncodedBody)
        /// `multipart/form-data`, files streamed from disk.
        case multipart(MultipartFormData)
        /// `application/json`: bytes you encoded.
        case json(Data)
        /// Anything else, with its Content-Type.
        case raw(Data, contentType: String)
    }

    /// Any method on `/echo`: the request as the server read it (httpbin's `/anything`),
    /// for checking what a client really sends.
    ///
    /// ```swift
    /// let echo = try await client.echo(method: "POST", body: .form(["name": "Bob & Alice"]))
    /// echo.form["name"]       // ["Bob & Alice"]
    ///
    /// var form = MultipartFormData()
    /// try form.append(fileAt: url, name: "file")
    /// let files = try await client.echo(method: "PUT", body: .multipart(form)).files   // size and SHA-256
    /// ```
    ///
    /// - Parameters:
    ///   - method: any method; GET, PUT and DELETE are retried as `RetryPolicy` says.
    ///   - query: sent as the query string.
    ///   - headers: extra request headers (they come back in `headers`).
    public func echo(
        method: String = "GET", query: FormURLEncodedBody = [:], body: EchoBody? = nil,
        headers: [String: String] = [:]
    ) async throws(JotterClientError) -> EchoResponse {
        if body != nil, ["GET", "HEAD"].contains(method.uppercased()) {
            throw JotterClientError(
                kind: .invalidRequest,
                message: "a \(method.uppercased()) request can't carry a body here (URLSession on Linux refuses it); "
                    + "send the fields as the query, or use POST")
        }
        var request = makeRequest(method.uppercased(), "/echo", query: query, headers: headers)
        let data: Data
        switch body {
        case .multipart(let form):
            (data, _) = try await send(form, request: request, progress: nil)
            return try Self.decode(EchoResponse.self, from: data)
        case .form(let form):
            request.setValue(FormURLEncodedBody.contentType, forHTTPHeaderField: "Content-Type")
            request.httpBody = form.data
        case .json(let json):
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = json
        case .raw(let bytes, let contentType):
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            request.httpBody = bytes
        case nil:
            break
        }
        return try await send(request, decoding: EchoResponse.self).value
    }
}
