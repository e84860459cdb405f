/**
 * An organization's id: the key of its rows (`_org`) and run state in a schema many organizations share, stored
 * as given. Ids are what other systems call their organizations (a UUID, `acme-emea`, `ACME.eu`); the names of an
 * organization's partitions and stages come from a short key the schema assigns to it (organization_keys,
 * src/load/organization-keys.ts), never from the id.
 */
const ORGANIZATION_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The organization of a schema loaded before organizations, and of a run that names none. */
export const DEFAULT_ORGANIZATION = 'default';

/** How a valid id reads, for the one-line error that names a bad one. */
export const ORGANIZATION_ID_RULE = 'an organization id of 1-64 letters, digits, -, _ or .';

export function isOrganizationId(text: string): boolean {
  return ORGANIZATION_ID.test(text);
}
