// The wire module's types (JSONValue, ProblemDetails, JSONSchema) are part of the wire types' API.
@_exported import JotterWire
