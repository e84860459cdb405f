import type { PostFilter } from './post-filter.js';
import { MAX_POSTS_PER_DAY, type PostGenerator } from './post-generator.js';

interface DayChanges {
  /** Next index to hand out: postsPerDay, plus every post added since. */
  next: number;
  removed: Set<number>;
}

/** Compact (day, index) references to posts, in served order. */
export interface PostRefs {
  readonly days: Int32Array;
  readonly indexes: Int32Array;
  readonly length: number;
}

/**
 * Which posts exist on each day: indexes 0..postsPerDay-1 by default; days touched by addPosts/removePosts
 * keep their changes. Added posts get fresh indexes, so a removed post never comes back as a "new" one.
 */
export class PostCatalog {
  readonly #postsPerDay: number;
  readonly #changes = new Map<number, DayChanges>();

  constructor(postsPerDay: number) {
    this.#postsPerDay = postsPerDay;
  }

  #day(day: number): DayChanges {
    let changes = this.#changes.get(day);
    if (changes === undefined) {
      changes = { next: this.#postsPerDay, removed: new Set() };
      this.#changes.set(day, changes);
    }
    return changes;
  }

  add(day: number, count: number): void {
    const changes = this.#day(day);
    if (changes.next + count > MAX_POSTS_PER_DAY) {
      throw new RangeError(`a day holds at most ${MAX_POSTS_PER_DAY} posts; cannot add ${count}`);
    }
    changes.next += count;
  }

  /** Removes the last `count` existing posts of the day (fewer if the day has fewer). */
  remove(day: number, count: number): void {
    const changes = this.#day(day);
    let left = count;
    for (let index = changes.next - 1; index >= 0 && left > 0; index--) {
      if (!changes.removed.has(index)) {
        changes.removed.add(index);
        left--;
      }
    }
  }

  /** Existing post indexes of a day, ascending. */
  *indexes(day: number): Generator<number> {
    const changes = this.#changes.get(day);
    const next = changes?.next ?? this.#postsPerDay;
    for (let index = 0; index < next; index++) {
      if (changes === undefined || !changes.removed.has(index)) yield index;
    }
  }

  /** The posts dated startDay..endDay (inclusive) that pass the filter, ordered by date then index. */
  select(startDay: number, endDay: number, filter: PostFilter, generator: PostGenerator): PostRefs {
    const days: number[] = [];
    const indexes: number[] = [];
    for (let day = startDay; day <= endDay; day++) {
      for (const index of this.indexes(day)) {
        if (generator.matches(day, index, filter)) {
          days.push(day);
          indexes.push(index);
        }
      }
    }
    return { days: Int32Array.from(days), indexes: Int32Array.from(indexes), length: days.length };
  }
}
