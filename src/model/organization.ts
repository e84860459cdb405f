/**
 * An organization's id: the key of its rows (`_org`) and run state in a schema many organizations share. It also
 * names the organization's partitions and stages (`posts_<id>_y2026`), so it is a plain lower-case word short
 * enough for every name made of it to stay within PostgreSQL's 63 bytes.
 */
const ORGANIZATION_ID = /^[a-z][a-z0-9_]{0,15}$/;

/** The organization of a schema loaded before organizations, and of a run that names none. */
export const DEFAULT_ORGANIZATION = 'default';

/** How a valid id reads, for the one-line error that names a bad one. */
export const ORGANIZATION_ID_RULE =
  'an organization id of 1-16 lower-case letters, digits or _, starting with a letter';

export function isOrganizationId(text: string): boolean {
  return ORGANIZATION_ID.test(text);
}
