"""Which files the map reads, and the tree-sitter queries that find their definitions.

The queries are bosun's own, in the spirit of the tags queries editors use: a capture
`def.KIND` marks the name of a definition of that kind. References are not queried one
pattern at a time: every identifier-like node of a file that is not a definition's name
counts as a reference, which is what a ranking by "who uses what" needs and costs one
pattern per language.
"""

from __future__ import annotations

from dataclasses import dataclass

# file extension -> tree-sitter-language-pack name
EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".rb": "ruby",
}

# When one name node is captured by several patterns (a method is also a function),
# the kind listed first here wins.
KIND_ORDER = (
    "method",
    "class",
    "interface",
    "trait",
    "struct",
    "enum",
    "type",
    "module",
    "macro",
    "function",
    "constant",
)

_PYTHON = """
(class_definition name: (identifier) @def.class)
(function_definition name: (identifier) @def.function)
(class_definition body: (block (function_definition name: (identifier) @def.method)))
(class_definition body: (block (decorated_definition
  definition: (function_definition name: (identifier) @def.method))))
(module (expression_statement (assignment left: (identifier) @def.constant)))
"""

_JS_COMMON = """
(function_declaration name: (identifier) @def.function)
(generator_function_declaration name: (identifier) @def.function)
(method_definition name: (property_identifier) @def.method)
(variable_declarator name: (identifier) @def.function value: (arrow_function))
(variable_declarator name: (identifier) @def.function value: (function_expression))
(program (lexical_declaration (variable_declarator name: (identifier) @def.constant)))
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @def.constant))))
"""

_JAVASCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (identifier) @def.class)
"""
)

_TYPESCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (type_identifier) @def.class)
(abstract_class_declaration name: (type_identifier) @def.class)
(interface_declaration name: (type_identifier) @def.interface)
(type_alias_declaration name: (type_identifier) @def.type)
(enum_declaration name: (identifier) @def.enum)
(function_signature name: (identifier) @def.function)
(method_signature name: (property_identifier) @def.method)
(abstract_method_signature name: (property_identifier) @def.method)
"""
)

_GO = """
(function_declaration name: (identifier) @def.function)
(method_declaration name: (field_identifier) @def.method)
(type_spec name: (type_identifier) @def.type)
(type_spec name: (type_identifier) @def.struct type: (struct_type))
(type_spec name: (type_identifier) @def.interface type: (interface_type))
(source_file (const_declaration (const_spec name: (identifier) @def.constant)))
(source_file (var_declaration (var_spec name: (identifier) @def.constant)))
"""

_RUST = """
(function_item name: (identifier) @def.function)
(impl_item body: (declaration_list (function_item name: (identifier) @def.method)))
(trait_item body: (declaration_list
  (function_signature_item name: (identifier) @def.method)))
(trait_item name: (type_identifier) @def.trait)
(struct_item name: (type_identifier) @def.struct)
(enum_item name: (type_identifier) @def.enum)
(union_item name: (type_identifier) @def.struct)
(type_item name: (type_identifier) @def.type)
(const_item name: (identifier) @def.constant)
(static_item name: (identifier) @def.constant)
(mod_item name: (identifier) @def.module)
(macro_definition name: (identifier) @def.macro)
"""

_JAVA = """
(class_declaration name: (identifier) @def.class)
(record_declaration name: (identifier) @def.class)
(interface_declaration name: (identifier) @def.interface)
(enum_declaration name: (identifier) @def.enum)
(annotation_type_declaration name: (identifier) @def.interface)
(method_declaration name: (identifier) @def.method)
(constructor_declaration name: (identifier) @def.method)
"""

_C_COMMON = """
(function_definition declarator: (function_declarator
  declarator: (identifier) @def.function))
(function_definition declarator: (pointer_declarator declarator: (function_declarator
  declarator: (identifier) @def.function)))
(declaration declarator: (function_declarator declarator: (identifier) @def.function))
(struct_specifier name: (type_identifier) @def.struct body: (_))
(union_specifier name: (type_identifier) @def.struct body: (_))
(enum_specifier name: (type_identifier) @def.enum body: (_))
(type_definition declarator: (type_identifier) @def.type)
(preproc_def name: (identifier) @def.macro)
(preproc_function_def name: (identifier) @def.macro)
"""

_CPP = (
    _C_COMMON
    + """
(class_specifier name: (type_identifier) @def.class body: (_))
(function_definition declarator: (function_declarator
  declarator: (qualified_identifier name: (identifier) @def.method)))
(function_definition declarator: (function_declarator
  declarator: (field_identifier) @def.method))
(field_declaration declarator: (function_declarator
  declarator: (field_identifier) @def.method))
(namespace_definition name: (namespace_identifier) @def.module)
"""
)

_RUBY = """
(method name: (_) @def.method)
(singleton_method name: (_) @def.method)
(class name: (constant) @def.class)
(class name: (scope_resolution name: (constant) @def.class))
(module name: (constant) @def.module)
(module name: (scope_resolution name: (constant) @def.module))
(program (assignment left: (constant) @def.constant))
"""


@dataclass(frozen=True)
class Language:
    name: str
    definitions: str  # query source: captures named def.KIND
    references: tuple[str, ...]  # node types that name something


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language("python", _PYTHON, ("identifier",)),
        Language("javascript", _JAVASCRIPT, ("identifier", "property_identifier")),
        Language(
            "typescript", _TYPESCRIPT, ("identifier", "property_identifier", "type_identifier")
        ),
        Language("tsx", _TYPESCRIPT, ("identifier", "property_identifier", "type_identifier")),
        Language("go", _GO, ("identifier", "field_identifier", "type_identifier")),
        Language("rust", _RUST, ("identifier", "field_identifier", "type_identifier")),
        Language("java", _JAVA, ("identifier", "type_identifier")),
        Language("c", _C_COMMON, ("identifier", "field_identifier", "type_identifier")),
        Language(
            "cpp",
            _CPP,
            ("identifier", "field_identifier", "type_identifier", "namespace_identifier"),
        ),
        Language("ruby", _RUBY, ("identifier", "constant")),
    )
}


def language_of(path: str) -> str | None:
    """The language a file is parsed as, from its name; None: not mapped."""
    dot = path.rfind(".")
    if dot == -1 or "/" in path[dot:]:
        return None
    return EXTENSIONS.get(path[dot:].lower())
