package dev.ptn;

import java.util.Collections;
import java.util.List;

/**
 * What the generated {@link Metadata} hands to the runtime: the name grammar, the well-known
 * names and the x-ptn-rules of schema/metadata.schema.json. Nothing in the runtime names a
 * well-known name or a cross-field rule.
 */
public final class SchemaTables {
  /** One well-known name (a {@code properties} entry of the schema). */
  public static final class WellKnown {
    public final String name;
    /** bool, int, float, str, or the same with "s" for a list. */
    public final String kind;
    /** Long or Double (by the kind), or null. */
    public final Object minimum;
    public final Object maximum;
    /** The allowed values (Boolean, Long, Double or String), or null. */
    public final List<Object> choices;
    /** Integer, or null. */
    public final Integer minItems;
    public final String description;

    public WellKnown(
        String name,
        String kind,
        Object minimum,
        Object maximum,
        List<Object> choices,
        Integer minItems,
        String description) {
      this.name = name;
      this.kind = kind;
      this.minimum = minimum;
      this.maximum = maximum;
      this.choices = choices == null ? null : Collections.unmodifiableList(choices);
      this.minItems = minItems;
      this.description = description;
    }
  }

  /** One x-ptn-rules entry (spec 9.4): together, equal-length or less-than. */
  public static final class Rule {
    public final String id;
    public final String kind;
    public final List<String> names;
    /** Null when the rule has no such key. */
    public final String lengthName;
    public final String bound;
    public final String requiredBy;

    public Rule(
        String id,
        String kind,
        List<String> names,
        String lengthName,
        String bound,
        String requiredBy) {
      this.id = id;
      this.kind = kind;
      this.names = Collections.unmodifiableList(names);
      this.lengthName = lengthName;
      this.bound = bound;
      this.requiredBy = requiredBy;
    }
  }

  public final String schemaId;
  /** A Java regex equivalent of the schema's Python-syntax pattern, matched at the start. */
  public final String namePattern;
  public final int nameMaxChars;
  public final List<WellKnown> wellKnown;
  public final List<Rule> rules;

  public SchemaTables(
      String schemaId,
      String namePattern,
      int nameMaxChars,
      List<WellKnown> wellKnown,
      List<Rule> rules) {
    this.schemaId = schemaId;
    this.namePattern = namePattern;
    this.nameMaxChars = nameMaxChars;
    this.wellKnown = Collections.unmodifiableList(wellKnown);
    this.rules = Collections.unmodifiableList(rules);
  }
}
