/**
 * The finance example in Cedar, as the configuration docs show it: the finance group may refund up
 * to 500; every signed-in user may call what its target calls read-only. The policy tests of both
 * axes decide with it.
 */
export const FINANCE_POLICIES = `
@id("finance-refunds")
permit (principal is McpGateway::User, action == McpGateway::Action::"tools/call", resource == McpGateway::Tool::"payments___refund")
when { principal.groups.contains("finance") && context.arguments has amount && context.arguments.amount <= 500 };

@id("read-only-for-everyone-signed-in")
permit (principal is McpGateway::User, action, resource is McpGateway::Tool)
when { resource has readOnlyHint && resource.readOnlyHint };
`;
