/* The field dictionary describes every field the documentation names, as the loader types them. */
import { describe, expect, it } from 'vitest';
import { documentedFields, SEGMENTS_FIELD } from '../../../src/load/declared-types.js';
import { describedFields, fieldDescription } from '../../../src/model/field-dictionary.js';

describe('fieldDescription', () => {
  it('describes each documented field, the post id and asset id under their branded names too', () => {
    for (const postId of ['platform_post_id', 'acme_post_id', 'post_id']) {
      for (const field of documentedFields(postId).filter((f) => f !== SEGMENTS_FIELD)) {
        expect(fieldDescription(field, postId), `${field} (post id ${postId})`).toMatch(/\S/);
      }
    }
    expect(fieldDescription('acme_asset_id', 'acme_post_id')).toBe(
      fieldDescription('platform_asset_id', 'platform_post_id'),
    );
  });

  it('describes no field the documentation does not name', () => {
    expect(new Set(describedFields())).toEqual(
      new Set(
        documentedFields('platform_post_id').filter((f) => f !== SEGMENTS_FIELD && f !== 'platform_post_id'),
      ),
    );
    for (const field of ['impressions', 'constructor', '__proto__', 'toString']) {
      expect(fieldDescription(field, 'platform_post_id')).toBeUndefined();
    }
  });
});
