/**
 * Operators' roles as Mastodon has them (its UserRole): a role carries permission flags, one bit each, with
 * Mastodon's bit values, so `permissions` means the same number to every Mastodon client. `administrator` implies
 * every other flag. A user without a role has none of the operators' flags (Mastodon's "everyone" role grants only
 * invite_users; here only roles that carry it may invite, services/invites.ts).
 *
 * Which flag each operators' route and command needs is decided here, in one table per surface, and the auth
 * plugin, the operators' pages and the CLI ask it: a route that has no entry is refused at start-up (API) or at
 * once (pages, CLI), so none can forget its check.
 */
export const PERMISSION_FLAGS = {
  administrator: 1 << 0,
  view_devops: 1 << 1,
  view_audit_log: 1 << 2,
  view_dashboard: 1 << 3,
  manage_reports: 1 << 4,
  manage_federation: 1 << 5,
  manage_settings: 1 << 6,
  manage_blocks: 1 << 7,
  manage_taxonomies: 1 << 8,
  manage_appeals: 1 << 9,
  manage_users: 1 << 10,
  manage_invites: 1 << 11,
  manage_rules: 1 << 12,
  manage_announcements: 1 << 13,
  manage_custom_emojis: 1 << 14,
  manage_webhooks: 1 << 15,
  invite_users: 1 << 16,
  manage_roles: 1 << 17,
  manage_user_access: 1 << 18,
  delete_user_data: 1 << 19,
  view_feeds: 1 << 20,
} as const;

export type Permission = keyof typeof PERMISSION_FLAGS;

export const ALL_PERMISSIONS = Object.values(PERMISSION_FLAGS).reduce((a, b) => a | b, 0);

/** The default roles (Mastodon's config/roles.yml), made by the migration; an operator may change or add others. */
export const DEFAULT_ROLES: readonly { name: string; position: number; permissions: readonly Permission[] }[] = [
  { name: 'Moderator', position: 10, permissions: ['invite_users', 'view_dashboard', 'view_audit_log', 'view_feeds', 'manage_users', 'manage_reports', 'manage_taxonomies'] },
  {
    name: 'Admin', position: 100,
    permissions: ['invite_users', 'view_dashboard', 'view_audit_log', 'view_feeds', 'manage_users', 'manage_user_access', 'delete_user_data',
      'manage_reports', 'manage_taxonomies', 'manage_federation', 'manage_settings', 'manage_blocks', 'manage_appeals', 'manage_rules',
      'manage_invites', 'manage_announcements', 'manage_custom_emojis', 'manage_webhooks', 'manage_roles'],
  },
  { name: 'Owner', position: 1000, permissions: ['administrator'] },
];

export function permissionBits(names: readonly Permission[]): number {
  return names.reduce((bits, name) => bits | PERMISSION_FLAGS[name], 0);
}

/** The flags a role's stored bits amount to: `administrator` is all of them (Mastodon's computed_permissions). */
export function effectivePermissions(bits: number | string | null | undefined): number {
  const n = Number(bits ?? 0);
  return n & PERMISSION_FLAGS.administrator ? ALL_PERMISSIONS : n;
}

/** Whether a role with these stored bits has the permission. */
export function can(bits: number | string | null | undefined, permission: Permission): boolean {
  return (effectivePermissions(bits) & PERMISSION_FLAGS[permission]) !== 0;
}

/** Whether these bits open the operators' console at all (any flag but the everyday invite_users). */
export function isStaff(bits: number | string | null | undefined): boolean {
  return (effectivePermissions(bits) & ~PERMISSION_FLAGS.invite_users) !== 0;
}

/** The operator flags that make someone handle sign-ups and reports (they get those e-mails). */
export const OPERATOR_MAIL_BITS = PERMISSION_FLAGS.administrator | PERMISSION_FLAGS.manage_users | PERMISSION_FLAGS.manage_reports;

/**
 * The admin API (Mastodon's policies): by the route's path (as registered) and method, most specific first.
 * Deleting an account's data needs delete_user_data; every other account action manage_users.
 */
const API_ROUTES: readonly [method: string | '*', prefix: string, Permission][] = [
  ['DELETE', '/api/v1/admin/accounts/:id', 'delete_user_data'],
  ['*', '/api/v1/admin/accounts', 'manage_users'],
  ['*', '/api/v2/admin/accounts', 'manage_users'],
  ['*', '/api/v1/admin/reports', 'manage_reports'],
  ['*', '/api/v1/admin/domain_allows', 'manage_federation'],
  ['*', '/api/v1/admin/domain_blocks', 'manage_federation'],
  ['*', '/api/v1/admin/ip_blocks', 'manage_blocks'],
  ['*', '/api/v1/admin/email_domain_blocks', 'manage_blocks'],
  ['*', '/api/v1/admin/canonical_email_blocks', 'manage_blocks'],
  ['*', '/api/v1/admin/username_blocks', 'manage_blocks'],
  ['*', '/api/v1/admin/trends', 'manage_taxonomies'],
  ['*', '/api/v1/admin/measures', 'view_dashboard'],
  ['*', '/api/v1/admin/dimensions', 'view_dashboard'],
  ['*', '/api/v1/admin/retention', 'view_dashboard'],
  // The operators' pages (http/web/admin.ts) and the job queues' page.
  ['*', '/admin/approvals', 'manage_users'],
  ['*', '/admin/accounts', 'manage_users'],
  ['*', '/admin/reports', 'manage_reports'],
  ['*', '/admin/announcements', 'manage_announcements'],
  ['*', '/admin/disputes/appeals', 'manage_appeals'],
  ['*', '/admin/queues', 'view_devops'],
  ['*', '/admin/webhooks', 'manage_webhooks'],
  ['*', '/admin/settings', 'manage_settings'],
  ['*', '/admin/rules', 'manage_rules'],
  ['*', '/admin/relays', 'manage_federation'],
  ['*', '/admin/custom_emojis', 'manage_custom_emojis'],
  ['*', '/admin/roles', 'manage_roles'],
  ['*', '/admin/action_logs', 'view_audit_log'],
  ['*', '/admin/dashboard', 'view_dashboard'],
  ['*', '/admin/domain_blocks', 'manage_federation'],
  ['*', '/admin/domain_allows', 'manage_federation'],
  ['*', '/admin/ip_blocks', 'manage_blocks'],
  ['*', '/admin/email_domain_blocks', 'manage_blocks'],
  ['*', '/admin/username_blocks', 'manage_blocks'],
  ['*', '/admin/trends', 'manage_taxonomies'],
  ['*', '/admin/jobs', 'view_devops'],
];

/** The flag an operators' route needs, or null when the table has none (a programming error the caller refuses). */
export function permissionForRoute(method: string, url: string): Permission | null {
  for (const [m, prefix, permission] of API_ROUTES) {
    if ((m === '*' || m === method) && (m === '*' ? url === prefix || url.startsWith(`${prefix}/`) : url === prefix)) return permission;
  }
  return null;
}

/** The CLI's commands that act for an operator (`--as <username>`), by their first two words. */
const CLI_COMMANDS: Readonly<Record<string, Permission>> = {
  'accounts create': 'manage_users',
  'accounts approve': 'manage_users',
  'accounts reject': 'manage_users',
  'accounts suspend': 'manage_users',
  'accounts unsuspend': 'manage_users',
  'accounts silence': 'manage_users',
  'accounts unsilence': 'manage_users',
  'accounts sensitive': 'manage_users',
  'accounts unsensitive': 'manage_users',
  'accounts disable': 'manage_users',
  'accounts enable': 'manage_users',
  'accounts reset-password': 'manage_user_access',
  'accounts identities': 'manage_users',
  'accounts delete': 'delete_user_data',
  'accounts role': 'manage_roles',
  'accounts admin': 'manage_roles',
  reports: 'manage_reports',
  appeals: 'manage_appeals',
  rules: 'manage_rules',
  suggestions: 'manage_taxonomies',
  emoji: 'manage_custom_emojis',
  domains: 'manage_federation',
  federation: 'manage_federation',
  relay: 'manage_federation',
  media: 'view_devops',
  announcements: 'manage_announcements',
  webhooks: 'manage_webhooks',
  roles: 'manage_roles',
};

/** The flag a CLI command needs when run for an operator, or null for one that is not theirs to run. */
export function permissionForCommand(argv: readonly string[]): Permission | null {
  return CLI_COMMANDS[`${argv[0]} ${argv[1]}`] ?? CLI_COMMANDS[argv[0] ?? ''] ?? null;
}
