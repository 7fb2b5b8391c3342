//! The OpenAPI document a gateway serves: the interface's, with the supervisor API added. The
//! operations are [`api::ROUTES`], the table the router serves, and every schema is derived from
//! the type its handler reads or answers, so the document cannot say other than the code does.

use super::super::gate::Gate;
use super::super::store::Role;
use super::answer::Success;
use super::bodies::Body;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter};
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One operation of the supervisor API. The router, the role check
/// ([`super::api::Supervisor`]) and the OpenAPI document all read [`super::api::ROUTES`], so none
/// of them can leave an operation out.
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    /// The handler, served for `method` only.
    pub serve: fn(MethodFilter) -> MethodRouter<Arc<Gate>>,
    /// The role it needs beyond a viewer's, and how a refusal names what was tried.
    pub needs: Option<(Role, &'static str)>,
    pub doc: Doc,
}

/// How the document gets a type's schema, from the generator of its side (what is read, or what
/// is answered).
pub type SchemaOf = fn(&mut SchemaGenerator) -> Schema;

/// What the document says of one operation beyond its method and path.
pub struct Doc {
    pub id: &'static str,
    pub summary: &'static str,
    pub params: Option<Param>,
    pub body: Option<BodyDoc>,
    /// The 200 answer: what it is, and its schema (see [`answer`]).
    pub answer: (&'static str, SchemaOf),
    /// Refusals of the handler's own (a missing item, a conflict), beyond those of every
    /// operation (400 for what is read, 401, 403 for a role).
    pub refusals: &'static [(u16, &'static str)],
}

/// The parameters of an operation: the fields of the type its path or its query is read as.
pub enum Param {
    Path(SchemaOf),
    Query(SchemaOf),
}

pub struct BodyDoc {
    pub schema: SchemaOf,
    pub example: &'static str,
}

pub fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let schema = generator.subschema_for::<T>();
    transformed(generator, schema)
}

/// The schema of an answer `T` in the wire convention (`{"success": true, ...T}`).
pub fn answer<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    schema::<Success<T>>(generator)
}

/// A schema in the document's dialect (OpenAPI 3.0: `nullable`, no `const`), as the generator
/// makes its definitions when they are taken.
fn transformed(generator: &mut SchemaGenerator, mut schema: Schema) -> Schema {
    for t in generator.transforms_mut() {
        t.transform(&mut schema);
    }
    schema
}

pub const fn body<T: Body>() -> BodyDoc {
    BodyDoc {
        schema: schema::<T::Wire>,
        example: T::EXAMPLE,
    }
}

/// What is read is documented as read (`#[serde(default)]` fields are optional).
pub fn reading() -> SchemaGenerator {
    SchemaSettings::openapi3().into_generator()
}

/// What is answered is documented as written (a field skipped when empty is optional).
pub fn answering() -> SchemaGenerator {
    SchemaSettings::openapi3().for_serialize().into_generator()
}

/// Parameters are listed one by one, each with its own schema: no references.
fn parameters() -> SchemaGenerator {
    SchemaSettings::openapi3()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
}

const SECURITY: &str = "supervisorToken";
const ERROR: &str = "#/components/schemas/Error";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Operation {
    operation_id: &'static str,
    tags: [&'static str; 1],
    #[serde(rename = "x-extension")]
    extension: bool,
    summary: &'static str,
    security: [BTreeMap<&'static str, [(); 0]>; 1],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    parameters: Vec<Parameter>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_body: Option<RequestBody>,
    responses: BTreeMap<String, Answer>,
}

#[derive(Serialize)]
struct Parameter {
    name: String,
    #[serde(rename = "in")]
    location: &'static str,
    required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<Value>,
    schema: Value,
}

#[derive(Serialize)]
struct RequestBody {
    required: bool,
    content: Content,
}

#[derive(Serialize)]
struct Content {
    #[serde(rename = "application/json")]
    json: Media,
}

#[derive(Serialize)]
struct Media {
    schema: Schema,
    #[serde(skip_serializing_if = "Option::is_none")]
    example: Option<Value>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Answer {
    Shared {
        #[serde(rename = "$ref")]
        reference: &'static str,
    },
    Own {
        description: &'static str,
        content: Content,
    },
}

impl Answer {
    fn error(description: &'static str) -> Answer {
        Answer::Own {
            description,
            content: Content {
                json: Media {
                    schema: schemars::json_schema!({ "$ref": ERROR }),
                    example: None,
                },
            },
        }
    }
}

#[derive(Serialize)]
struct ApiKeyScheme {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "in")]
    location: &'static str,
    name: &'static str,
    description: &'static str,
}

/// One parameter per field of the type's schema (an object), its description lifted out.
fn params_of(param: &Param, generator: &mut SchemaGenerator) -> Vec<Parameter> {
    let (location, of) = match param {
        Param::Path(of) => ("path", of),
        Param::Query(of) => ("query", of),
    };
    let schema = of(generator);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    properties
        .into_iter()
        .map(|(name, mut schema)| {
            let description = schema.as_object_mut().and_then(|s| s.remove("description"));
            Parameter {
                required: location == "path" || required.contains(&name.as_str()),
                name,
                location,
                description,
                schema,
            }
        })
        .collect()
}

fn operation(
    route: &Route,
    reading: &mut SchemaGenerator,
    answering: &mut SchemaGenerator,
) -> Operation {
    let doc = &route.doc;
    let parameters = doc
        .params
        .as_ref()
        .map(|p| params_of(p, &mut parameters()))
        .unwrap_or_default();
    let request_body = doc.body.as_ref().map(|b| {
        let schema = (b.schema)(reading);
        RequestBody {
            // Every body may be empty (it reads as `{}`): one is needed only when `{}` is refused.
            required: required_fields(&schema, reading),
            content: Content {
                json: Media {
                    schema,
                    example: serde_json::from_str(b.example).ok(),
                },
            },
        }
    });
    let (description, of) = doc.answer;
    let mut responses = BTreeMap::new();
    responses.insert(
        "200".to_string(),
        Answer::Own {
            description,
            content: Content {
                json: Media {
                    schema: of(answering),
                    example: None,
                },
            },
        },
    );
    if request_body.is_some() || matches!(doc.params, Some(Param::Query(_))) {
        responses.insert(
            "400".into(),
            Answer::Shared {
                reference: "#/components/responses/Invalid",
            },
        );
    }
    responses.insert(
        "401".into(),
        Answer::Shared {
            reference: "#/components/responses/Unauthorized",
        },
    );
    if route.needs.is_some() {
        responses.insert(
            "403".into(),
            Answer::error(
                "The token's role may not do this: insufficient_role, naming the role needed",
            ),
        );
    }
    for (status, description) in doc.refusals {
        responses.insert(status.to_string(), Answer::error(description));
    }
    Operation {
        operation_id: doc.id,
        tags: ["gateway"],
        extension: true,
        summary: doc.summary,
        security: [BTreeMap::from([(SECURITY, [])])],
        parameters,
        request_body,
        responses,
    }
}

/// Whether a body's schema (a reference into the generator's definitions) requires a field.
fn required_fields(schema: &Schema, generator: &SchemaGenerator) -> bool {
    let named = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .and_then(|name| generator.definitions().get(name));
    named
        .unwrap_or(schema.as_value())
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
}

/// The supervisor API's paths and the schemas they refer to.
pub fn supervisor_api(routes: &[Route]) -> (Map<String, Value>, Map<String, Value>) {
    let (mut reading, mut answering) = (reading(), answering());
    let mut paths = Map::new();
    for route in routes {
        let op = serde_json::to_value(operation(route, &mut reading, &mut answering))
            .unwrap_or_default();
        let item = paths
            .entry(route.path)
            .or_insert_with(|| Value::Object(Map::new()));
        item[route.method.as_str().to_ascii_lowercase()] = op;
    }
    let mut schemas = answering.take_definitions(true);
    schemas.extend(reading.take_definitions(true));
    (paths, schemas)
}

/// The interface's document (the operations a gateway forwards) with the supervisor API added.
pub fn document(base_url: &str, routes: &[Route]) -> Value {
    let mut doc = crate::api::openapi::document(base_url);
    let (paths, schemas) = supervisor_api(routes);
    if let Some(all) = doc["paths"].as_object_mut() {
        all.extend(paths);
    }
    if let Some(all) = doc["components"]["schemas"].as_object_mut() {
        all.extend(schemas);
    }
    doc["components"]["securitySchemes"][SECURITY] = serde_json::to_value(ApiKeyScheme {
        kind: "apiKey",
        location: "header",
        name: "x-api-key",
        description: "A supervisor token minted with `agentdesk gate token`",
    })
    .unwrap_or_default();
    doc
}

#[cfg(test)]
mod tests {
    use super::super::api;
    use super::super::bodies::{Approve, Kill, PolicyRequest, Reject};
    use super::*;
    use crate::api::model::*;

    fn body_of<'a>(paths: &'a Map<String, Value>, method: &str, path: &str) -> &'a Value {
        &paths[path][method]["requestBody"]["content"]["application/json"]["schema"]
    }

    fn answer_of<'a>(paths: &'a Map<String, Value>, method: &str, path: &str) -> &'a Value {
        &paths[path][method]["responses"]["200"]["content"]["application/json"]["schema"]
    }

    #[test]
    fn every_route_is_documented_with_the_schemas_of_its_types() {
        let (paths, schemas) = supervisor_api(api::ROUTES);
        let mut documented = 0;
        for route in api::ROUTES {
            let method = route.method.as_str().to_ascii_lowercase();
            assert_eq!(paths[route.path][&method]["operationId"], route.doc.id);
            documented += 1;
        }
        let operations: usize = paths
            .values()
            .filter_map(Value::as_object)
            .map(Map::len)
            .sum();
        assert_eq!(operations, documented);

        let mut reading = reading();
        let bodies = [
            (
                "post",
                "/gate/v1/inbox/{id}/approve",
                schema::<Approve>(&mut reading),
            ),
            (
                "post",
                "/gate/v1/inbox/{id}/reject",
                schema::<Reject>(&mut reading),
            ),
            (
                "put",
                "/gate/v1/policy",
                schema::<PolicyRequest>(&mut reading),
            ),
            ("post", "/gate/v1/kill-switch", schema::<Kill>(&mut reading)),
            (
                "post",
                "/gate/v1/standing-approvals",
                schema::<GateStandingRequest>(&mut reading),
            ),
            (
                "post",
                "/gate/v1/agents/{label}/suspend",
                schema::<GateSuspendRequest>(&mut reading),
            ),
        ];
        for (method, path, schema) in &bodies {
            assert_eq!(
                body_of(&paths, method, path),
                schema.as_value(),
                "{method} {path}"
            );
        }
        let with_body = api::ROUTES.iter().filter(|r| r.doc.body.is_some()).count();
        assert_eq!(with_body, bodies.len());

        let mut answering = answering();
        let answers = [
            ("get", "/gate/v1/inbox", answer::<GateInbox>(&mut answering)),
            (
                "post",
                "/gate/v1/inbox/{id}/approve",
                answer::<GateDecision>(&mut answering),
            ),
            (
                "post",
                "/gate/v1/inbox/{id}/reject",
                answer::<GateDecision>(&mut answering),
            ),
            (
                "get",
                "/gate/v1/inbox/{id}/check",
                answer::<GateCheck>(&mut answering),
            ),
            (
                "post",
                "/gate/v1/inbox/{id}/link",
                answer::<GateLink>(&mut answering),
            ),
            (
                "get",
                "/gate/v1/agents",
                answer::<GateAgents>(&mut answering),
            ),
            (
                "post",
                "/gate/v1/agents/{label}/suspend",
                answer::<GateAgentsChanged>(&mut answering),
            ),
            (
                "post",
                "/gate/v1/agents/{label}/resume",
                answer::<GateAgentsChanged>(&mut answering),
            ),
            (
                "get",
                "/gate/v1/policy",
                answer::<GatePolicy>(&mut answering),
            ),
            (
                "put",
                "/gate/v1/policy",
                answer::<GatePolicyChanged>(&mut answering),
            ),
            (
                "get",
                "/gate/v1/kill-switch",
                answer::<GateKillSwitchAnswer>(&mut answering),
            ),
            (
                "post",
                "/gate/v1/kill-switch",
                answer::<GateKillSwitchAnswer>(&mut answering),
            ),
            (
                "get",
                "/gate/v1/standing-approvals",
                answer::<GateStandingList>(&mut answering),
            ),
            (
                "post",
                "/gate/v1/standing-approvals",
                answer::<GateStandingCreated>(&mut answering),
            ),
            (
                "delete",
                "/gate/v1/standing-approvals/{id}",
                answer::<GateRevoked>(&mut answering),
            ),
            (
                "get",
                "/gate/v1/journal",
                answer::<GateJournal>(&mut answering),
            ),
        ];
        assert_eq!(answers.len(), api::ROUTES.len());
        for (method, path, schema) in &answers {
            assert_eq!(
                answer_of(&paths, method, path),
                schema.as_value(),
                "{method} {path}"
            );
        }

        // The schemas referred to are the types' own, and no name stands for two of them.
        let mut expected = answering.take_definitions(true);
        for (name, schema) in reading.take_definitions(true) {
            assert!(
                expected.get(&name).is_none_or(|s| *s == schema),
                "{name} twice"
            );
            expected.insert(name, schema);
        }
        assert_eq!(schemas, expected);
    }

    #[test]
    fn parameters_are_the_fields_of_the_path_and_query_types() {
        let (paths, _) = supervisor_api(api::ROUTES);
        let names = |method: &str, path: &str| -> Vec<(String, bool)> {
            paths[path][method]["parameters"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            (
                                p["name"].as_str().unwrap().to_string(),
                                p["required"] == true,
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let id = vec![("id".to_string(), true)];
        assert_eq!(names("post", "/gate/v1/inbox/{id}/approve"), id);
        assert_eq!(names("delete", "/gate/v1/standing-approvals/{id}"), id);
        let label = vec![("label".to_string(), true)];
        assert_eq!(names("post", "/gate/v1/agents/{label}/suspend"), label);
        assert_eq!(names("post", "/gate/v1/agents/{label}/resume"), label);
        let optional = |n: &[&str]| n.iter().map(|n| (n.to_string(), false)).collect::<Vec<_>>();
        assert_eq!(
            names("get", "/gate/v1/inbox"),
            optional(&["since", "status", "wait"])
        );
        assert_eq!(
            names("get", "/gate/v1/journal"),
            optional(&["after", "limit"])
        );
        let revoke = &paths["/gate/v1/standing-approvals/{id}"]["delete"]["parameters"][0];
        assert_eq!(revoke["schema"]["type"], "integer");
    }
}
