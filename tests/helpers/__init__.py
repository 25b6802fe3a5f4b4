"""What several test files share: fakes (an OpenAI/Anthropic provider, an MCP server), builders
and readers, imported as `helpers.<module>`; fixtures over them live in the conftest files."""
